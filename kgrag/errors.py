"""Exceptions with messages meant for users (the CLI prints them without a traceback)."""


class KgragError(Exception):
    """Base class: an error whose message explains what to change."""


class DataNotFoundError(KgragError):
    """A dataset file or directory is missing."""


class DownloadError(KgragError):
    """A public dataset could not be downloaded."""


class SparqlError(KgragError):
    """A SPARQL endpoint answered with an error or could not be reached."""


class LLMError(KgragError):
    """An LLM endpoint failed after all retries, or never produced valid output."""


class NetworkNotFound(LookupError):
    """No knowledge network with that ``kn_id``."""
