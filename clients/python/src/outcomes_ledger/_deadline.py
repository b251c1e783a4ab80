"""The deadline of a protected write (docs/api.md "Deadlines"): the value sent with the intent, and the
background thread that extends it every third of it while the block runs."""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable, Optional

from .errors import Conflict, InvalidRequest, NotFound, Unauthorized

DEFAULT_DEADLINE_SECS = 900
"""The server's default `--in-flight-deadline-secs` (docs/api.md "Deadlines"): the deadline of an
intent sent without `deadline_secs`, and so the one the client extends when none was given."""

MAX_DEADLINE_SECS = 604800
"""The longest deadline the ledger takes (7 days); 1 is the shortest."""

logger = logging.getLogger("outcomes_ledger")
"""Where the client logs what must never break a protected block: a failed deadline extension."""

# An extension refused for one of these will be refused again: the write is no longer in flight under
# this attempt (409: settled, by the ledger at its deadline too; 404: its session was deleted).
_FINAL = (Conflict, NotFound, InvalidRequest, Unauthorized)


def check_deadline_secs(deadline_secs: Optional[int]) -> Optional[int]:
    """`deadline_secs` as given (`None`: the server's default), or `ValueError` unless a whole number
    of seconds from 1 to 604800 (the ledger's limits, docs/api.md "Deadlines")."""
    if deadline_secs is None:
        return None
    if isinstance(deadline_secs, bool) or not isinstance(deadline_secs, int) or not (
        1 <= deadline_secs <= MAX_DEADLINE_SECS
    ):
        raise ValueError(
            f"deadline_secs is a whole number of seconds from 1 to {MAX_DEADLINE_SECS} (7 days), "
            f"not {deadline_secs!r}"
        )
    return deadline_secs


class Extender:
    """Extends one write's deadline while its block runs: every `deadline_secs / 3` seconds, one
    `POST …/deadline` `{"attempt_id", "deadline_secs"}` (`extend(timeout)` sends it, each try given at
    most a third of the deadline), on a daemon thread, so that a block which blocks its thread or
    event loop is extended too.

    Never raises into the block: a failed extension is logged (logger `outcomes_ledger`, WARNING);
    after a network error, a timeout or a 503/429 it is tried again after a ninth of the deadline;
    after a refusal (409: no longer in flight under this attempt, e.g. the ledger settled it at its
    deadline; 404; 4xx) it is not tried again. `stop()` ends it at once (an extension already on the
    wire may still land; its answer is then ignored).
    """

    def __init__(self, extend: Callable[[float], Any], what: str, deadline_secs: int) -> None:
        self._extend = extend
        self._what = what
        self.deadline_secs = deadline_secs
        self.interval = deadline_secs / 3
        self.extended = 0
        """How many extensions the ledger took."""
        self.failures = 0
        """How many extensions failed (each logged)."""
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"outcomes-ledger-deadline {what}", daemon=True)

    def start(self) -> "Extender":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()

    def _loop(self) -> None:
        wait = self.interval
        while not self._stopped.wait(wait):
            try:
                self._extend(self.interval)
            except _FINAL as err:
                if not self._stopped.is_set():
                    self.failures += 1
                    logger.warning("outcomes_ledger: the ledger refused to extend the deadline of %s; "
                                   "no further extensions: %s", self._what, err)
                return
            except Exception as err:  # noqa: BLE001 - nothing may reach the block
                if self._stopped.is_set():
                    return
                self.failures += 1
                wait = max(self.interval / 3, 0.1)
                logger.warning("outcomes_ledger: could not extend the deadline of %s (trying again in "
                               "%.1f s): %s: %s", self._what, wait, type(err).__name__, err)
                continue
            self.extended += 1
            wait = self.interval
