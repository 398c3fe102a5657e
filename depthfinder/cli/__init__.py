"""The command line, above the flows: each flag made from the config field that declares it (cli/flags.py)."""
