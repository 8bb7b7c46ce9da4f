"""The typed errors of configuration: one `ConfigError` per problem, and `ConfigErrors` when a set of
properties has several, so a user fixes them all in one go instead of one per run."""

from __future__ import annotations

from collections.abc import Sequence


class ConfigError(ValueError):
    """One problem with one key: `reason` is a single line that names the key."""

    def __init__(self, key: str, value: object, reason: str) -> None:
        super().__init__(reason)
        self.key, self.value, self.reason = key, value, reason


def _summary(errors: Sequence[ConfigError]) -> str:
    return "invalid configuration: " + "; ".join(error.reason for error in errors)


class ConfigErrors(ExceptionGroup[ConfigError], ValueError):
    """Several problems at once, one ConfigError each in `exceptions` (`except* ConfigError` works);
    still a ValueError, so callers that catch bad input as ValueError catch this too."""

    def __new__(cls, errors: Sequence[ConfigError]) -> ConfigErrors:
        return super().__new__(cls, _summary(errors), errors)

    def __init__(self, errors: Sequence[ConfigError]) -> None:
        super().__init__(_summary(errors), errors)
        self.errors: tuple[ConfigError, ...] = tuple(errors)
