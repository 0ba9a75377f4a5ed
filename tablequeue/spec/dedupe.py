"""The Queue spec's `dedupe`: what enqueueing a messageId that already exists does (replace the
row, keep it, or keep it within a window), and how a call's own choice overrides the queue's."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, get_args

from pydantic import Field, field_serializer, model_validator

from ..durations import Duration, format_duration, parse_duration
from ..errors import InvalidInput
from ..limits import MAX_SECONDS
from ..names import DedupeMode
from .base import SpecModel

MODES: tuple[str, ...] = get_args(DedupeMode)


class Dedupe(SpecModel):
    """replace: a new version replaces the row (attempts reset, status back to the default).
    keep: the existing row is left as it is, whatever its status. window: the existing row is
    left as it is until `window` has passed since it was enqueued (its `created_at`), even
    after it was processed; after that the new message replaces it and the window starts again."""

    mode: DedupeMode = Field(
        "replace", description="replace (default), keep, or window: see the Message identity page"
    )
    window: Duration = Field(
        None,
        description="With mode window: how long after a message was enqueued its messageId "
        "stays unique (Processed rows are kept at least this long)",
    )

    @model_validator(mode="before")
    @classmethod
    def _null_is_unset(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("window", "") is None:  # as a dump writes it
            data = {k: v for k, v in data.items() if k != "window"}
        return data

    @model_validator(mode="after")
    def _window_with_its_mode(self) -> Dedupe:
        if self.mode != "window":
            if self.window is not None:
                raise ValueError(
                    f"dedupe.window is read only with dedupe.mode window, not {self.mode}"
                )
            return self
        if self.window is None:
            raise ValueError("dedupe.mode window needs dedupe.window (e.g. 1h; forever is keep)")
        check_window(self.window, "dedupe.window")
        return self

    @field_serializer("window")
    def _dump_window(self, value: timedelta | None) -> str | None:
        return None if value is None else format_duration(value)

    @property
    def window_seconds(self) -> float | None:
        """The window in seconds in mode window, else None."""
        return self.window.total_seconds() if self.mode == "window" and self.window else None

    def keeps_processed(self, keep: timedelta | None) -> timedelta | None:
        """How long Processed rows stay given `keepProcessedFor` (None = forever): in mode
        window at least the window, so a later enqueue still finds the row."""
        if keep is None or self.mode != "window" or self.window is None:
            return keep
        return max(keep, self.window)


def check_window(window: timedelta | None, field: str) -> timedelta:
    """A window is longer than 0s and at most MAX_SECONDS ("forever" is mode keep)."""
    if window is None or not timedelta(0) < window <= timedelta(seconds=MAX_SECONDS):
        shown = format_duration(window)
        raise ValueError(
            f"{field} must be longer than 0s and at most {MAX_SECONDS} seconds, not {shown} "
            "(for forever use mode keep)"
        )
    return window


def for_call(queue_rule: Dedupe, mode: str | None, window: object = None) -> Dedupe:
    """The rule of one enqueue call: its own mode (and window) if given, else the queue's. A
    call's mode window without a window of its own uses the queue's window."""
    if mode is None:
        if window is not None:
            raise InvalidInput("a dedupe window is given only with dedupe mode window")
        return queue_rule
    if mode not in MODES:
        raise InvalidInput(f"dedupe {mode!r} is not a mode: use {', '.join(MODES)}")
    if mode != "window":
        if window is not None:
            raise InvalidInput(f"a dedupe window is given only with dedupe mode window, not {mode}")
        return Dedupe.model_validate({"mode": mode})
    if window is None:
        if queue_rule.mode != "window":
            raise InvalidInput(
                "dedupe mode window needs a window: the queue's spec.dedupe has none, so give "
                "the call's own (dedupe_window, dedupeWindow, --dedupe-window)"
            )
        return queue_rule
    try:
        own = check_window(parse_duration(window), "the dedupe window")
    except ValueError as error:
        raise InvalidInput(str(error)) from None
    return Dedupe(mode="window", window=own)
