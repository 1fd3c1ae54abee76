"""`shadowrl deploy --rollback`: restore the previously deployed checkpoint by hand.

    shadowrl deploy --rollback                          # the server `shadowrl realtime` started
    shadowrl deploy --rollback --server http://127.0.0.1:8000

It calls the server's `POST /admin/rollback`, which hot-swaps the checkpoint deployed
before the live one back in and marks the live one `rolled_back` in the registry.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from shadowrl.commands.config import Config
from shadowrl.commands.errors import UsageError


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rollback", action="store_true", required=True, help="roll back now")
    p.add_argument("--server", help="server URL (default: the one realtime started in run_dir)")
    p.add_argument(
        "--token-file",
        help="file holding the admin token (default: realtime.admin_token, else the token "
        "`shadowrl realtime` made in <run_dir>/realtime/admin_token)",
    )


def run(args: argparse.Namespace, config: Config) -> int:
    from shadowrl.realtime import TOKEN_FILE, ServerError, ServerProcess, read_admin_token

    default = Path(config.run_dir) / "realtime" / TOKEN_FILE
    token_file = Path(args.token_file) if args.token_file else default
    if args.token_file or not config.realtime.admin_token:
        try:
            token = read_admin_token(token_file)
        except OSError as e:
            raise UsageError(f"no admin token: cannot read {token_file}; give --token-file") from e
    else:
        token = config.realtime.admin_token
    url = args.server
    if url is None:
        state = Path(config.run_dir) / "realtime" / "server.json"
        if not state.exists():
            raise UsageError(f"no server recorded at {state}; give --server URL")
        url = json.loads(state.read_text())["url"]
    try:
        out = ServerProcess(0, url.rstrip("/"), token).rollback()
    except ServerError as e:
        raise UsageError(f"rollback refused: {e}") from e
    except OSError as e:
        raise UsageError(f"cannot reach {url}: {e}") from e
    print(f"rolled back {out['rolled_back']}; now serving {out['deployed']} (v{out['version']})")
    return 0
