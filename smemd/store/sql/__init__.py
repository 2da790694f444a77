"""The SQL both backends run: one module per concern, over a Connection (connection.py) that
each backend supplies with its dialect."""
