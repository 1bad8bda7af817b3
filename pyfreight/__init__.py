"""pyfreight: builds standalone, relocatable CPython distributions."""

__version__ = "0.1.0"
