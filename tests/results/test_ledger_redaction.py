"""A ledger is shared with the results: no URL password reaches it, in argv (``URL`` or
``--opt=URL``) or in the options."""

from __future__ import annotations

from pathlib import Path

from streameval.results.ledger import RunInputs, build_ledger, plain_options


def test_no_password_reaches_the_ledger(tmp_path: Path) -> None:
    secret = "s3cret-pa55"
    argv = [
        "attach",
        f"mqtts://evaluator:{secret}@127.0.0.1:8883/m",
        f"--keys-url=mqtt://u:{secret}@127.0.0.1/k",
    ]
    options = plain_options({"url": f"mqtt://u:{secret}@h/s", "urls": [f"ws://a:{secret}@h/"]})
    ledger = build_ledger(tmp_path, RunInputs("attach", argv, options), [])
    text = str(ledger)
    assert secret not in text
    assert ledger["inputs"]["argv"] == [
        "attach",
        "mqtts://evaluator@127.0.0.1:8883/m",
        "--keys-url=mqtt://u@127.0.0.1/k",
    ]
    assert ledger["inputs"]["options"] == {"url": "mqtt://u@h/s", "urls": ["ws://a@h/"]}
