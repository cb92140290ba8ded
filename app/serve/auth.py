"""API keys of `piaoju serve`: from the environment variable PIAOJU_API_KEYS (comma-separated) and/or a
file given by --keys (one key a line; blank lines and lines starting with # ignored).

A request is let in when its `Authorization: Bearer KEY` matches one of them. Every configured key is
compared with `hmac.compare_digest` (constant time), and all of them are compared whatever matched, so
neither the time nor the order tells an attacker anything about a key. Jobs remember a digest of the key
that sent them (`client_id`), never the key: a client sees only its own jobs, and the fair queue takes
turns between keys.
"""
from __future__ import annotations

import hashlib
import hmac
import os
from pathlib import Path

KEYS_ENV = "PIAOJU_API_KEYS"
MIN_KEY_LENGTH = 16
NO_AUTH_CLIENT = "anonymous"


class KeyConfigError(ValueError):
    pass


def _check(key: str, where: str) -> str:
    if len(key) < MIN_KEY_LENGTH or any(c.isspace() for c in key) or not key.isprintable():
        raise KeyConfigError(f"an API key in {where} is shorter than {MIN_KEY_LENGTH} characters or holds spaces or "
                             "control characters; make one with `python -c \"import secrets; "
                             "print(secrets.token_urlsafe(32))\"`")
    return key


def load_keys(keys_file: str | None = None, environ: dict[str, str] | None = None) -> list[str]:
    """The configured keys (environment first, then the file), checked; [] when none is configured."""
    env = os.environ if environ is None else environ
    keys = [_check(k.strip(), KEYS_ENV) for k in env.get(KEYS_ENV, "").split(",") if k.strip()]
    if keys_file:
        try:
            text = Path(keys_file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise KeyConfigError(f"--keys {keys_file}: cannot be read ({getattr(exc, 'strerror', None) or exc})") \
                from None
        keys += [_check(line.strip(), f"--keys {keys_file}") for line in text.splitlines()
                 if line.strip() and not line.strip().startswith("#")]
    return list(dict.fromkeys(keys))


def client_id(key: str) -> str:
    """What the job store keeps of a key: a short digest naming the client, from which the key cannot be had."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


class KeyChecker:
    def __init__(self, keys: list[str]) -> None:
        self._keys = [k.encode("utf-8") for k in keys]
        self._clients = [client_id(k) for k in keys]

    @property
    def enabled(self) -> bool:
        return bool(self._keys)

    def client(self, authorization: str | None) -> str | None:
        """The client id for an Authorization header value, or None when it carries no valid key."""
        if not self._keys:
            return NO_AUTH_CLIENT
        if not authorization:
            return None
        scheme, _, token = authorization.partition(" ")
        given = token.strip().encode("utf-8", "surrogateescape")
        found = None
        for key, client in zip(self._keys, self._clients):
            if hmac.compare_digest(key, given):     # every key compared, match or not
                found = client
        return found if scheme.lower() == "bearer" else None
