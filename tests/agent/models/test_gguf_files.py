"""The GGUF files already on the machine (`_gguf_files`): found in the usual cache layouts
(the hub's symlinked snapshots, LM Studio's folders, llama.cpp's cache; split files once,
projectors and broken files never), the folders named by the tools' own variables, and
the header read as llama.cpp reads it (context length, chat template)."""

from __future__ import annotations

from pathlib import Path

from nbagent.agent.models import cache_folders, find_gguf_files, read_header
from nbagent.local import gguf_path
from tests.agent.models.helpers import gguf

LLAMA3 = "{% for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>{% endfor %}"


def test_ggufs_in_the_usual_caches_are_found_with_what_their_header_says(
        tmp_path: Path) -> None:
    home = tmp_path / "home"
    folders = cache_folders(env={}, home=home)
    hub, lm_studio, _, llama_cache = folders
    snapshot = hub / "models--Qwen--Qwen2.5-7B-Instruct-GGUF" / "snapshots" / "abc123"
    blob = gguf(hub / "models--Qwen--Qwen2.5-7B-Instruct-GGUF" / "blobs" / "f00d")
    snapshot.mkdir(parents=True)
    (snapshot / "qwen2.5-7b-instruct-q4_k_m.gguf").symlink_to(blob)  # the hub's layout
    gguf(lm_studio / "lmstudio-community" / "Llama-3.2-3B" / "Llama-3.2-3B-Q4_K_M.gguf",
         context=131072, template=LLAMA3)
    gguf(lm_studio / "lmstudio-community" / "Llama-3.2-3B" / "mmproj-model-f16.gguf")
    gguf(llama_cache / "big-00001-of-00002.gguf", context=4096)
    gguf(llama_cache / "big-00002-of-00002.gguf", context=4096)
    gguf(llama_cache / "broken.gguf", magic=b"NOPE")
    (llama_cache / "smollm2.gguf").symlink_to(gguf_path())  # the embedded default
    found = {f.path.name: f for f in find_gguf_files(folders, skip=[gguf_path()])}
    assert set(found) == {"qwen2.5-7b-instruct-q4_k_m.gguf", "Llama-3.2-3B-Q4_K_M.gguf",
                          "big-00001-of-00002.gguf"}
    qwen = found["qwen2.5-7b-instruct-q4_k_m.gguf"]
    assert (qwen.context_length, qwen.tools) == (32768, True)  # ChatML: real tool calls
    llama = found["Llama-3.2-3B-Q4_K_M.gguf"]
    assert (llama.context_length, llama.tools) == (131072, False)


def test_the_cache_folders_follow_the_tools_own_variables(tmp_path: Path) -> None:
    folders = cache_folders(env={"HF_HOME": str(tmp_path / "hf"),
                                 "LLAMA_CACHE": str(tmp_path / "ll")}, home=tmp_path)
    assert folders[0] == tmp_path / "hf" / "hub" and folders[-1] == tmp_path / "ll"
    assert cache_folders(env={"HF_HUB_CACHE": "/x/hub"}, home=tmp_path)[0] == Path("/x/hub")


def test_the_real_smollm2_header_reads_as_llama_cpp_reads_it() -> None:
    length, template = read_header(gguf_path())
    assert length == 8192 and template is not None and "<|im_start|>" in template
