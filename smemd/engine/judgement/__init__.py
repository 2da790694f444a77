"""Judgement: deciding how a fact relates to what is stored, and learning how far to trust that.

`letter_judge` asks a model one multiple-choice question and reads the letters' probabilities;
`questions` are what it is asked; `verdicts` the calls as the store logs them. Reconciling a new
fact is decided by `reconcile_by_rules` (the heuristic, no model) or `reconcile_by_model` (the
judge, falling back to the rules when undecided). `labels` are people's corrections, and
`calibration` (with `logistic` and `reapplication`) moves each judge's threshold from them.
Imports only `ids` and `index` (its words) of the engine."""
