"""Dreaming: work on the memories while the models are idle (`dreamer`): types put to the judge
(`typer`), `extends` links between near neighbours (`linker`), and inferences drawn from two or
more memories (`inferrer`, asking the model as `inference_prompt` says). May import `index`,
`judgement`, `entities` and the shared modules."""
