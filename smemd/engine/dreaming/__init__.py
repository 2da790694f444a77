"""Dreaming: work on the memories while the models are idle (`dreamer`): types put to the judge
(`typer`) and `extends` links between near neighbours (`linker`). May import `index`,
`judgement` and the shared modules."""
