"""Errors a user can cause and fix. Each message names the problem in one line."""


class TableQueueError(Exception):
    """Base class: the CLI prints these as one line, the API maps them to 4xx."""

    @property
    def public(self) -> str:
        """The message as API clients see it (`str()` unless a subclass must hide something)."""
        return str(self)


class InvalidInput(TableQueueError, ValueError):
    """Bad names, statuses, JSON bodies, options."""


class PredicateError(InvalidInput):
    """A predicate that does not parse or cannot be compiled."""


class SpecError(InvalidInput):
    """A Queue resource that does not validate."""


class QueueNotFound(TableQueueError, LookupError):
    """The queue is not in the registry of this database.

    `str()` may name the database (for the CLI's user, who chose it); `public` never does (for
    API clients, who should not learn where the database lives).
    """

    def __init__(self, public: str, where: str = "", hint: str = "") -> None:
        super().__init__(public + (f" in {where}" if where else "") + (f": {hint}" if hint else ""))
        self._public = public
        self.where = where

    @property
    def public(self) -> str:
        return self._public


class MessageNotFound(TableQueueError, LookupError):
    """No message with that id or tracking id."""


class ScheduleNotFound(TableQueueError, LookupError):
    """No schedule of that name in the queue."""


class SubscriptionNotFound(TableQueueError, LookupError):
    """No runtime subscription of that queue to that topic."""


class Conflict(TableQueueError):
    """The request is valid but the row is in a state that forbids it."""


class TrackingIdTaken(Conflict):
    """A tracking id the caller chose already names another message."""


class RuntimeSubscriptionsNotAllowed(Conflict):
    """A runtime subscription to a queue whose spec does not allow them."""


class QueueOwnedElsewhere(Conflict):
    """Another Queue resource (another namespace) manages the queue of that name."""


class NotAQueueTable(Conflict):
    """A table to adopt exists but is not a queue table."""


class QueueTableMissing(Conflict):
    """The queue is registered but its table is gone (dropped outside tablequeue)."""


class IndexBuildBusy(Conflict):
    """Another apply is building the JSON indexes of this database (PostgreSQL); try later."""


class DatabaseUnavailable(TableQueueError, ConnectionError):
    """The database could not be reached.

    `str()` names the database (without its password) and the driver's words, for logs and the
    CLI's user; `public` does not (the driver's words name the host and port too), for API
    clients.
    """

    @property
    def public(self) -> str:
        return "database unavailable"


class SchemaTooNew(TableQueueError):
    """A table was created by a newer tablequeue than this one."""


class QueueSpecWarning(UserWarning):
    """A Queue spec that is valid but likely a mistake (`QueueSpec.warnings`): `apply` warns
    and goes on."""


class PermanentFailure(Exception):
    """Raise from a handler when retrying cannot help: the message goes to Error at once."""
