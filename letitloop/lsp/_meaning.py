"""What a call means, for the code actions: the step name a quick fix proposes, and whether a
function does work that ``@durable`` protects.

A name taken from the call's last attribute says little (``os.environ.get`` gives ``get``,
``requests.post`` gives ``post``); ``step_name`` names what the call does (``read_env``,
``http_post``, ``now``, ``new_uuid``), and for any other call joins a generic verb with what it
acts on (``crm.get`` gives ``get_crm``). ``does_durable_work`` is true for a function that calls
``step()``/``atomic_marker()``/``approval()`` or holds a call the diagnostics would report inside
a durable function (time, randomness, the environment, the network, a side effect): only such a
function is offered "Make it @durable". Pure functions of source text; nothing is imported or run.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from letitloop.lsp import _rules

# Exact meanings first: resolved dotted name -> step name.
_EXACT = {
    "os.getenv": "read_env",
    "os.getenvb": "read_env",
    "os.environ.get": "read_env",
    "os.environ.copy": "read_env",
    "os.environ[]": "read_env",
    "datetime.datetime.now": "now",
    "datetime.datetime.utcnow": "now",
    "datetime.datetime.today": "now",
    "datetime.date.today": "today",
    "uuid.uuid1": "new_uuid",
    "uuid.uuid4": "new_uuid",
    "os.urandom": "random_bytes",
    "os.getrandom": "random_bytes",
    "os.system": "run_command",
    "os.remove": "remove_file",
    "os.unlink": "remove_file",
    "os.rename": "move_file",
    "os.replace": "move_file",
    "os.mkdir": "make_dir",
    "os.makedirs": "make_dir",
    "os.rmdir": "remove_dir",
    "shutil.rmtree": "remove_dir",
    "shutil.copy": "copy_file",
    "shutil.copyfile": "copy_file",
    "shutil.move": "move_file",
    "open": "write_file",
}
_HTTP = {"get", "post", "put", "patch", "delete", "head", "options", "request"}
# By module prefix: what a call into it does, with its function's name where that helps.
_MODULES: tuple[tuple[str, Callable[[str], str]], ...] = (
    ("time.", lambda fn: "now"),
    ("random.", lambda fn: "random" if fn == "random" else f"random_{fn}"),
    ("numpy.random.", lambda fn: f"random_{fn}"),
    ("secrets.", lambda fn: "new_token" if fn.startswith("token") else f"random_{fn}"),
    ("subprocess.", lambda fn: "run_command"),
    ("requests.", lambda fn: f"http_{fn}" if fn in _HTTP else "http_request"),
    ("httpx.", lambda fn: f"http_{fn}" if fn in _HTTP else "http_request"),
    ("aiohttp.", lambda fn: "http_request"),
    ("urllib.request.", lambda fn: "http_request"),
    ("urllib3.", lambda fn: "http_request"),
    ("smtplib.", lambda fn: "send_email"),
    ("socket.", lambda fn: "network_call"),
    ("boto3.", lambda fn: "call_aws"),
    ("openai.", lambda fn: "call_llm"),
    ("anthropic.", lambda fn: "call_llm"),
    ("litellm.", lambda fn: "call_llm"),
)
# Method names that say nothing without what they act on.
_GENERIC = {
    "get", "post", "put", "patch", "delete", "head", "request", "create", "run", "call",
    "send", "sendall", "write", "read", "fetch", "load", "execute", "invoke", "commit",
    "publish", "update", "query", "list", "search", "submit", "upload", "download", "complete",
    "write_text", "write_bytes", "writelines", "send_message", "sendmail", "unlink",
}  # fmt: skip
_LLM_WORDS = ("chat", "completions", "messages", "responses", "generate", "llm")
_IDENT = re.compile(r"[^0-9a-zA-Z]+")


def _snake(text: str) -> str:
    text = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", text)
    return _IDENT.sub("_", text).strip("_").lower()


def step_name(dotted: str) -> str:
    """A step (or marker) name for the call ``dotted`` (its resolved dotted name, as the
    diagnostics report it: ``os.environ.get``, ``requests.post``, ``client.users.fetch``)."""
    dotted = dotted.strip()
    if dotted in _EXACT:
        return _EXACT[dotted]
    if dotted.startswith("os.environ"):
        return "read_env"
    for prefix, name in _MODULES:
        if dotted.startswith(prefix):
            return _snake(name(dotted.rsplit(".", 1)[-1])) or "effect"
    parts = [p for p in dotted.replace("[]", "").split(".") if p]
    if not parts:
        return "effect"
    last = parts[-1]
    if any(w in parts for w in _LLM_WORDS) and last in ("create", "generate", "complete"):
        return "call_llm"
    if last in _GENERIC and len(parts) > 1:
        owner = next((p for p in reversed(parts[:-1]) if p not in _LLM_WORDS), parts[-2])
        return _snake(f"{last}_{owner.lstrip('_')}") or "effect"
    return _snake(last) or "effect"


def _aliases(tree: ast.Module) -> dict[str, str]:
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                found[a.asname or a.name.split(".")[0]] = (
                    a.name if a.asname else a.name.split(".")[0]
                )
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                found[a.asname or a.name] = f"{node.module}.{a.name}" if node.module else a.name
    return found


def _find_def(tree: ast.Module, qualname: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    parts = qualname.replace(".<locals>", "").split(".")
    scope: list[ast.stmt] = tree.body
    found: ast.AST | None = None
    for name in parts:
        found = next(
            (
                n
                for n in scope
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and n.name == name
            ),
            None,
        )
        if found is None:
            return None
        scope = found.body
    return found if isinstance(found, (ast.FunctionDef, ast.AsyncFunctionDef)) else None


def _durable_work(call: ast.Call, aliases: dict[str, str]) -> bool:
    full = _rules.dotted(call.func, aliases) or ""
    last = full.rsplit(".", 1)[-1]
    if last in _rules.STEP_KINDS and (full == last or full.startswith("letitloop.")):
        return True
    prefixes = tuple(f"{m}." for m in (*_rules.NONDETERMINISTIC_MODULES, *_rules.NETWORK_MODULES))
    if (
        full in _rules.NONDETERMINISTIC
        or full in _rules.ENVIRONMENT
        or full in _rules.SIDE_EFFECTS
        or full.startswith(prefixes)
        or full.startswith(tuple(f"{m}." for m in _rules.SIDE_EFFECT_MODULES))
    ):
        return True
    if isinstance(call.func, ast.Attribute) and call.func.attr in _rules.SIDE_EFFECT_METHODS:
        return True
    return full == "open" and _rules._writes(call)


def does_durable_work(source: str, qualname: str) -> bool:
    """Whether the function ``qualname`` of ``source`` calls a step helper or does something a
    crash-proof function must journal (see the module doc)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    fn = _find_def(tree, qualname)
    if fn is None:
        return False
    aliases = _aliases(tree)
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and _durable_work(node, aliases):
            return True
        if isinstance(node, ast.Subscript) and _rules.dotted(node.value, aliases) == "os.environ":
            return True
    return False
