"""The markers compaction writes and how they are recognised: each predicate knows its
own block and no other, so a block nbagent wrote is never taken for the user's message
(or for another kind of block), whatever the role it sits in."""

from __future__ import annotations

from typing import Any

import pytest

from nbagent.engine import (
    IMAGES_CLEARED,
    IMAGES_HEADER,
    MEMORY_HEADER,
    NOTE_CLEARED,
    NOTE_HEADER,
    PINS_HEADER,
    STATE_HEADER,
    SUMMARY_HEADER,
    is_cleared,
    is_images,
    is_memory,
    is_note,
    is_notebook_state,
    is_pins,
    is_plain_user,
    is_snipped,
    is_summary,
    snip_placeholder,
)

Message = dict[str, Any]
IMAGES: Message = {"role": "user", "content": [
    {"type": "text", "text": IMAGES_HEADER},
    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}
BLOCKS: dict[str, Message] = {
    "memory": {"role": "user", "content": f"{MEMORY_HEADER}\n- notes"},
    "summary": {"role": "user", "content": f"{SUMMARY_HEADER}\n## 1. Primary Request"},
    "state": {"role": "user", "content": f"{STATE_HEADER}\ndf: DataFrame"},
    "note": {"role": "user", "content": f"{NOTE_HEADER}\ndf: DataFrame"},
    "cleared-note": {"role": "user", "content": NOTE_CLEARED},
    "images": IMAGES,
    "cleared-images": {"role": "user", "content": IMAGES_CLEARED},
    "pins": {"role": "system", "content": f"{PINS_HEADER}\n- revenue is in EUR"},
    "typed": {"role": "user", "content": "Load data/sales.csv into sales_df."},
}
PREDICATES = {"memory": is_memory, "summary": is_summary, "state": is_notebook_state,
              "note": is_note, "images": is_images, "pins": is_pins, "typed": is_plain_user}
# which block each predicate accepts (a cleared note is still a note, cleared figures
# still figures)
ACCEPTS = {"memory": {"memory"}, "summary": {"summary"}, "state": {"state"},
           "note": {"note", "cleared-note"}, "images": {"images", "cleared-images"},
           "pins": {"pins"}, "typed": {"typed"}}


@pytest.mark.parametrize("predicate", sorted(PREDICATES))
def test_each_predicate_knows_its_own_block_and_no_other(predicate: str) -> None:
    accepted = {name for name, block in BLOCKS.items() if PREDICATES[predicate](block)}
    assert accepted == ACCEPTS[predicate]


def test_a_header_in_another_role_is_not_a_block() -> None:
    for name in ("memory", "summary", "state", "note"):
        assert not PREDICATES[name]({**BLOCKS[name], "role": "assistant"})
    assert not is_pins({**BLOCKS["pins"], "role": "user"})


def test_a_snipped_result_names_what_it_replaced_and_is_cleared() -> None:
    placeholder = snip_placeholder("call-7", "Names: sales_df")
    assert is_snipped(placeholder) and 'recall(query="call-7")' in placeholder
    assert placeholder.endswith("\nNames: sales_df") and not is_snipped("a real result")
    assert is_cleared({"role": "tool", "tool_call_id": "call-7", "content": placeholder})
    assert not is_cleared({"role": "user", "content": placeholder})  # only a tool result
    cleared = {name for name, block in BLOCKS.items() if is_cleared(block)}
    assert cleared == {"cleared-note", "cleared-images"}
