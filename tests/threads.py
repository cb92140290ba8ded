"""`in_thread`: a call made on a new thread with a time limit, so a call that blocks forever (a FIFO
opened for reading, a deadlock on the model thread) fails its test instead of hanging the suite."""
from __future__ import annotations

import threading
from typing import Any, Callable


def in_thread(call: Callable[[], Any], seconds: float, hung: str) -> Any:
    """`call()` on a new daemon thread; its result, or its exception raised here; fails with `hung`
    when it has not returned after `seconds`."""
    out: dict[str, Any] = {}

    def target() -> None:
        try:
            out["value"] = call()
        except BaseException as exc:  # handed back to the test
            out["error"] = exc
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), hung
    if "error" in out:
        raise out["error"]
    return out["value"]
