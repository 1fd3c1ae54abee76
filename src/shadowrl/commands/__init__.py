"""The top floor: the CLI, the config tree, the one policy opener, one module per command.

Nothing imports this package. Read `main.py` for the command table, `config.py` for the
config tree, `policies.py` for what a policy name can be.
"""
