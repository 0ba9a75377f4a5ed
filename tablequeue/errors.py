"""Errors a user can cause and fix. Each message names the problem in one line."""


class TableQueueError(Exception):
    """Base class: the CLI prints these as one line, the API maps them to 4xx."""


class InvalidInput(TableQueueError, ValueError):
    """Bad names, statuses, JSON bodies, options."""


class PredicateError(InvalidInput):
    """A predicate that does not parse or cannot be compiled."""


class SpecError(InvalidInput):
    """A Queue resource that does not validate."""


class QueueNotFound(TableQueueError, LookupError):
    """The queue is not in the registry of this database."""


class MessageNotFound(TableQueueError, LookupError):
    """No message with that id or tracking id."""


class Conflict(TableQueueError):
    """The request is valid but the row is in a state that forbids it."""


class DatabaseUnavailable(TableQueueError, ConnectionError):
    """The database could not be reached (the URL is shown without its password)."""


class SchemaTooNew(TableQueueError):
    """A table was created by a newer tablequeue than this one."""


class PermanentFailure(Exception):
    """Raise from a handler when retrying cannot help: the message goes to Error at once."""
