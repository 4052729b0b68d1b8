"""Example inputs and tool modules for the command line and notebooks."""
