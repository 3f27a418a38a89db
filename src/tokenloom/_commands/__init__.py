"""One module per ``tokenloom`` subcommand; ``tokenloom.cli.COMMANDS`` lists them (see its docstring)."""
