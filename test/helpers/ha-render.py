#!/usr/bin/env python3
"""Renders Home Assistant MQTT templates with Jinja2, the engine Home Assistant renders them with.

stdin: a JSON list of {"id", "template", "value" (the payload as text), "value_json" (parsed, or absent)}.
stdout: a JSON list of {"id", "result"} or {"id", "error"}.

Home Assistant renders MQTT templates in a sandboxed environment; its undefined logs and fails on any use beyond
`default`/`is defined`, so StrictUndefined stands in for it here: a template that leans on a missing key fails.
`to_json` is Home Assistant's own filter (Jinja's `tojson` is built in).
"""
import json
import sys

from jinja2 import StrictUndefined
from jinja2.sandbox import ImmutableSandboxedEnvironment

env = ImmutableSandboxedEnvironment(undefined=StrictUndefined)
env.filters["to_json"] = lambda v: json.dumps(v)

out = []
for job in json.load(sys.stdin):
    variables = {"value": job.get("value", "")}
    if "value_json" in job:
        variables["value_json"] = job["value_json"]
    try:
        out.append({"id": job["id"], "result": str(env.from_string(job["template"]).render(**variables))})
    except Exception as e:  # noqa: BLE001 - every failure is a finding for the test
        out.append({"id": job["id"], "error": f"{type(e).__name__}: {e}"})
json.dump(out, sys.stdout)
