"""`chat_format_for` (`_chat_format`): a GGUF whose own template is ChatML gets our
tool-calling chat format; any other template (or none) keeps llama.cpp's own reading."""

from __future__ import annotations

import pytest

from nbagent.local import TOOL_CALLING_FORMAT, chat_format_for


@pytest.mark.parametrize(("template", "expected"), [
    ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}",
     TOOL_CALLING_FORMAT),
    ("{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>"
     "\n\n{{ m.content }}<|eot_id|>{% endfor %}", None),
    ("", None)], ids=["chatml", "llama-3", "no-template"])
def test_the_chat_format_follows_the_ggufs_own_template(template: str,
                                                          expected: str | None) -> None:
    assert chat_format_for({"tokenizer.chat_template": template} if template else {}) == expected
