"""Fuzz the whole HTTP API from its own OpenAPI schema (schemathesis).

Every operation gets generated requests, valid and invalid, over real HTTP to the app
serving the tiny random model behind the real engine, with small server-side caps so
no request runs long. Every response must be no 5xx, of a documented status and content
type, and match the documented schema: schemathesis's default checks but one,
`positive_data_acceptance`, since a schema-valid request may still be a 400 for limits
no schema states (a prompt over the context, token ids outside the vocabulary, a weights
path that holds no weights). Hypothesis is derandomized with a bounded number of
examples, so every run sends the same requests.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import positive_data_acceptance

from shadowrl.serve.app import create_app
from shadowrl.serve.threaded import serve_in_thread

OPERATIONS = [
    ("POST", "/v1/chat/completions"),
    ("POST", "/v1/completions"),
    ("GET", "/v1/models"),
    ("GET", "/health"),
    ("POST", "/admin/load_weights"),
    ("POST", "/admin/rollback"),
]
NO_BODY = {"/admin/rollback"}
EXAMPLES = {"POST": 20, "GET": 3}  # bodies have room to vary; the GETs take no input
ADMIN_TOKEN = "fuzz-admin"  # sent with every case: admin is refused without a token


@pytest.fixture(scope="module")
def api_schema(engine: Any, tokenizer: Any) -> Iterator[Any]:
    app = create_app(
        engine,
        tokenizer,
        "tiny-fuzz",
        max_context_tokens=256,
        max_n=2,
        max_tokens_cap=4,
        admin_token=ADMIN_TOKEN,
    )
    with serve_in_thread(app) as url:
        yield schemathesis.openapi.from_url(f"{url}/openapi.json")


def test_the_schema_lists_every_route(api_schema: Any) -> None:
    listed = {(r.ok().method.upper(), r.ok().path) for r in api_schema.get_all_operations()}
    assert listed == set(OPERATIONS)


@pytest.mark.parametrize(
    ("method", "path", "mode"),
    [
        (method, path, mode)
        for method, path in OPERATIONS
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
        # a GET, and a POST without a body, have nothing to negate
        if (method == "POST" and path not in NO_BODY) or mode == GenerationMode.POSITIVE
    ],
)
def test_every_response_is_documented_and_no_5xx(
    api_schema: Any, method: str, path: str, mode: GenerationMode
) -> None:
    operation = api_schema[path][method]

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=EXAMPLES[method],
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def check(case: Any) -> None:
        case.call_and_validate(
            excluded_checks=[positive_data_acceptance],
            timeout=30,
            headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
        )

    check()
