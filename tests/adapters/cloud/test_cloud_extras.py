"""The cloud extras, checked in a fresh interpreter: importing the core and every cloud adapter loads
none of botocore, azure-identity or google-auth, and with those packages missing (their import
blocked before metis starts) a Bedrock, Azure or Vertex call is a ConfigError naming the extra
to install, raised before any request leaves the process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

CLOUD_PACKAGES = ("botocore", "azure.identity", "azure.core", "google.auth", "google.oauth2")

SCRIPT = """
import importlib.abc, json, sys

BLOCKED = ("botocore", "azure.identity", "google.auth")

class Missing(importlib.abc.MetaPathFinder):  # as if `pip install metis-core` had no extras
    def find_spec(self, name, path=None, target=None):
        if any(name == b or name.startswith(b + ".") for b in BLOCKED):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Missing())

import metis_core
import metis_core.adapters.client
import metis_core.adapters.azure_openai.adapter, metis_core.adapters.bedrock.adapter, metis_core.adapters.vertex.adapter
loaded = sorted(m for m in sys.modules if m.startswith(PACKAGES))

from metis_core.adapters.client import ModelClient
from metis_core.errors import MetisError
from metis_core.messages import user_message
from metis_core.transport.retry import RetryPolicy

dead = "http://127.0.0.1:9"  # the discard port: a request that left would fail as a network error
told = {}
with ModelClient(base_urls={p: dead for p in ("bedrock", "azure", "vertex", "vertex_anthropic")},
                 retry=RetryPolicy(max_retries=0)) as models:
    for model in ("bedrock:us.amazon.nova-micro-v1:0", "azure:gpt-4o", "vertex:gemini-2.5-flash",
                  "vertex_anthropic:claude-haiku-4-5@20251001"):
        try:
            models.complete([user_message("hi")], model)
            told[model] = None
        except Exception as failed:
            told[model] = [type(failed).__name__, isinstance(failed, MetisError), str(failed)]
import os
os.environ["AWS_BEARER_TOKEN_BEDROCK"] = "ABSKbm90LWEta2V5"  # a Bedrock API key: no signing, but a stream
with ModelClient(base_urls={"bedrock": dead}, retry=RetryPolicy(max_retries=0)) as models:
    try:
        events = list(models.stream([user_message("hi")], "bedrock:us.amazon.nova-micro-v1:0"))
        told["bedrock stream with an API key"] = [type(e).__name__ + ": " + getattr(e, "message", "") for e in events]
    except Exception as failed:
        told["bedrock stream with an API key"] = [type(failed).__name__, isinstance(failed, MetisError), str(failed)]
print(json.dumps({"loaded": loaded, "told": told}))
"""


def test_the_core_loads_no_cloud_sdk_and_a_missing_extra_is_named(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "METIS_HOME": str(tmp_path),
           "AWS_ACCESS_KEY_ID": "AKIAZ7EXTRASTEST0000", "AWS_SECRET_ACCESS_KEY": "extras/test+secret",
           "AWS_REGION": "us-east-1", "GOOGLE_CLOUD_PROJECT": "metis-test-project"}
    code = f"PACKAGES = {CLOUD_PACKAGES!r}\n" + SCRIPT
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert ran.returncode == 0, ran.stderr
    found = json.loads(ran.stdout.splitlines()[-1])
    assert found["loaded"] == [], "importing metis_core and the cloud adapters loaded a cloud SDK"
    extras = {"bedrock": "bedrock", "azure": "azure", "vertex": "vertex", "vertex_anthropic": "vertex",
              "bedrock stream with an API key": "bedrock"}
    for model, told in found["told"].items():
        assert told is not None, f"{model} answered without its SDK"
        name, is_metis_error, message = told
        assert is_metis_error and name.endswith("ExtraMissingError"), (model, told)
        assert f"pip install 'metis-core[{extras[model.partition(':')[0]]}]'" in message, (model, message)
