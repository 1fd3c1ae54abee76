"""`shadowrl keys`: the server's API keys (`serve.api_keys`), stored as digests only.

    shadowrl keys add --name alice [--private]   # prints the key once; keep it
    shadowrl keys list                           # ids, names, private or not; never keys
    shadowrl keys revoke key-1f2e3d4c

A private key's traffic is served but never recorded (nor exported for training). A
running server picks up changes within a second (`serve/auth.py`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from shadowrl.commands.config import Config
from shadowrl.commands.errors import UsageError


def add_args(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="keys_command", required=True)
    add = sub.add_parser("add", help="make a key, store its digest, print the key once")
    add.add_argument("--name", required=True, help="who the key is for (shown by `list`)")
    add.add_argument("--private", action="store_true", help="serve its traffic but never record it")
    sub.add_parser("list", help="the keys: id, name, private, created")
    revoke = sub.add_parser("revoke", help="delete a key: its requests get 401 from then on")
    revoke.add_argument("id", help="a key id, as `list` shows it")


def key_file(config: Config) -> Path:
    if config.serve.api_keys is None:
        raise UsageError("serve.api_keys is not set: give --serve.api_keys=keys.json")
    path = Path(config.serve.api_keys)
    return path if path.is_absolute() else Path(config.run_dir) / path


def private_keys(config: Config) -> frozenset[str]:
    """The private keys of `serve.api_keys` (none without a key file)."""
    from shadowrl.serve import KeyFileError, private_key_ids

    if config.serve.api_keys is None:
        return frozenset()
    try:
        return private_key_ids(key_file(config))
    except KeyFileError as e:
        raise UsageError(str(e)) from e


def run(args: argparse.Namespace, config: Config) -> int:
    from shadowrl.serve import KeyFileError, add_key, read_keys, revoke_key

    path = key_file(config)
    try:
        if args.keys_command == "add":
            entry, key = add_key(path, args.name, args.private)
            print(
                f"{entry.id} ({entry.name}{', private' if entry.private else ''}) added to {path}"
            )
            print(key)  # the only time the key is shown: the file holds its digest
        elif args.keys_command == "list":
            for k in read_keys(path):
                print(f"{k.id}\t{k.name}\t{'private' if k.private else 'recorded'}\t{k.created_at}")
        else:
            gone = revoke_key(path, args.id)
            print(f"{gone.id} ({gone.name}) revoked")
    except KeyFileError as e:
        raise UsageError(str(e)) from e
    except KeyError as e:
        raise UsageError(f"no key {args.id!r} in {path} (see `shadowrl keys list`)") from e
    return 0
