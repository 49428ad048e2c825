# Copyright 2026 lrda_ros maintainers
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""
The package's error family: one base, one class per kind of fault, the culprit named.

Every error raised on purpose derives from :class:`LrdaError` and carries ``field``: the
parameter, option, message field or topic at fault (None when there is no single one), so
callers name it without parsing messages. The kinds say who must act:

- :class:`ConfigError`: a setting (parameter, option, configuration field) is unusable; the
  user changes the setting. Raised at start-up or when a setting changes.
- :class:`InputError`: an input (a message, a frame, a file, a recording) is unusable; the
  node drops that frame and counts it, batch tools name the input and stop.
- :class:`ModelError`: a depth model cannot be loaded or built.

Each also derives from the builtin exception its callers historically caught (ValueError,
RuntimeError), so ``except ValueError`` keeps working.
"""

from __future__ import annotations

from typing import Iterable


class LrdaError(Exception):
    """Base of every error this package raises on purpose."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        #: The parameter, option, message field or topic at fault, when there is one.
        self.field = field


class ConfigError(LrdaError, ValueError):
    """A setting is unusable; ``field`` names it."""


class InputError(LrdaError, ValueError):
    """An input (message, frame, file, recording) is unusable; ``field`` names the part."""


class ModelError(LrdaError, RuntimeError):
    """A depth model cannot be loaded or built."""


def check_fields(checks: Iterable[tuple[bool, str, str]], prefix: str = '',
                 error: type[LrdaError] = ConfigError) -> None:
    """
    Raise ``error`` for the first failed check of a configuration, naming its field.

    ``checks``: (passes, field, message) triples, in the order a user should fix them; the
    message is prefixed with ``prefix`` (the configuration's name).
    """
    for passes, field, message in checks:
        if not passes:
            raise error(f'{prefix}{message}', field=field)


def error_line(error: BaseException) -> str:
    """
    Return the one line the command prints for an error.

    Errors of this package (and missing files, bad values) say what to change in their first
    line; other types are named, since they point at a bug rather than at the input.
    """
    lines = str(error).strip().splitlines()
    text = lines[0].rstrip(' :;') if lines else ''
    if not isinstance(error, (ValueError, OSError, RuntimeError)):
        text = f'{type(error).__name__}: {text} (a bug? rerun with --debug and report it)'
    elif len(lines) > 1:
        text += ' (--debug shows the rest)'
    return text
