"""The one exception type the CLI turns into a clean message and a non-zero exit."""


class PyfreightError(Exception):
    """An error a user can act on: the message names the thing and the fix."""
