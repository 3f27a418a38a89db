"""One module per ``tokenloom`` subcommand; ``tokenloom.cli`` finds them here (see its docstring)."""
