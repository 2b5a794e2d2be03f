"""Issue 29, point 7: a task file's unknown keys are always named, with the nearest valid key."""

from __future__ import annotations

from pathlib import Path

import pytest

from letitloop.tasks import TaskFileError, load_task


def _project(tmp: Path, text: str) -> Path:
    (tmp / "tasks").mkdir()
    (tmp / "tasks" / "t.toml").write_text(text)
    return tmp


@pytest.mark.parametrize(
    ("text", "said"),
    [
        # the newcomer's case: the misspelt key was the only paths there was
        ('goal = "x"\npahts = ["src/**"]\nagents = ["claude"]', "'pahts' (did you mean 'paths'?)"),
        ('gaol = "x"\npaths = ["a"]\nagents = ["claude"]', "'gaol' (did you mean 'goal'?)"),
        (
            'goal = "x"\npaths = ["a"]\nagents = ["claude"]\n[limits]\natempts = 2',
            "'atempts' (did you mean 'attempts'?)",
        ),
        (
            'goal = "x"\npaths = ["a"]\nagents = ["claude"]\n[[checks]]\nkind = "regex"\n'
            'paterns = "x"\npaths = ["a"]',
            "'paterns' (did you mean 'pattern'?)",
        ),
        (
            'goal = "x"\npaths = ["a"]\nagents = [{name = "m", comand = ["m"]}]',
            "'comand' (did you mean 'command'?)",
        ),
        ('goal = "x"\npaths = ["a"]\nagents = ["claude"]\nzzz = 1', "unknown key 'zzz'"),
    ],
)
def test_an_unknown_key_is_named_with_the_nearest_one(tmp_path: Path, text: str, said: str) -> None:
    with pytest.raises(TaskFileError) as err:
        load_task(_project(tmp_path, text), "t")
    assert said in err.value.message, err.value.message
    assert "is empty" not in err.value.message
    assert err.value.fix and err.value.fix.startswith("the keys here are ")
