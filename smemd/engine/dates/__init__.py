"""Dates in text: absolute ones a query names as windows (`absolute`), relative days a fact or a
query names resolved against a reference day (`relative`), periods only a query names (`periods`:
"this month", "in the spring", "recently"), all of a question's read together against the instant
it is asked at (`windows`), and whether a text states a time at all (`mentions`); and the date a
document's metadata states, or a chat log's caption tells (`stated`). Pure functions; imports
nothing of the engine."""
