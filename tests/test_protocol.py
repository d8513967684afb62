"""The Search-R1 protocol: prompt template, chat template path, assistant prefix, action parsing, observations."""

from __future__ import annotations

import pytest

from searchrl.errors import ConfigError
from searchrl.models import default_tokenizer
from searchrl.protocol import (
    INVALID_ACTION_MESSAGE,
    PROTOCOL_PRESETS,
    SEARCH_R1_INSTRUCTION,
    ProtocolConfig,
    encode_observation,
    encode_prompt,
    encode_text,
    extract_think,
    format_question,
    parse_action,
    prompt_text,
    render_observation,
    truncate_query,
)
from searchrl.retrieval import Hit


@pytest.fixture(scope="module")
def tok():
    return default_tokenizer()


def _hit(i: int, text: str = "some passage text") -> Hit:
    return Hit(doc_id=f"d{i}", title=f"Title {i}", text=text, contents=f'"Title {i}"\n{text}')


def test_instruction_is_search_r1_verbatim():
    # Key phrases of Search-R1's make_prefix, typo included, and the trailing newline after the question.
    assert SEARCH_R1_INSTRUCTION.startswith("Answer the given question. You must conduct reasoning inside <think>")
    assert "You can search as many times as your want." in SEARCH_R1_INSTRUCTION
    assert "For example, <answer> Beijing </answer>. Question: {question}\n" in SEARCH_R1_INSTRUCTION
    assert INVALID_ACTION_MESSAGE == (
        "\nMy previous action is invalid. If I want to search, I should put the query between <search> and "
        "</search>. If I want to give the final answer, I should put the answer between <answer> and </answer>. "
        "Let me try again.\n"
    )


def test_question_is_stripped_and_gets_a_question_mark():
    assert format_question("  who wrote hamlet \n") == "who wrote hamlet?"
    assert format_question("who wrote hamlet?") == "who wrote hamlet?"


def test_raw_prompt_is_the_instruction_plus_prefix(tok):
    cfg = ProtocolConfig(use_chat_template=False, assistant_prefix="<search>")
    text = prompt_text(" who wrote hamlet ", cfg, tok)
    assert text == SEARCH_R1_INSTRUCTION.replace("{question}", "who wrote hamlet?") + "<search>"
    assert tok.decode(encode_prompt(" who wrote hamlet ", cfg, tok)) == text


def test_chat_template_path_puts_the_instruction_in_one_user_message(tok):
    cfg = ProtocolConfig()  # auto: the tokenizer has a chat template
    text = prompt_text("who wrote hamlet", cfg, tok)
    expected = tok.apply_chat_template(
        [{"role": "user", "content": SEARCH_R1_INSTRUCTION.replace("{question}", "who wrote hamlet?")}],
        tokenize=False,
        add_generation_prompt=True,
    )
    assert text == expected
    assert text.endswith("<|im_start|>assistant\n")
    ids = encode_prompt("who wrote hamlet", cfg, tok)
    assert tok.decode(ids) == text
    assert ids[0] == tok.convert_tokens_to_ids("<|im_start|>")  # special tokens come from the template


def test_system_message_few_shot_and_prefix(tok):
    cfg = ProtocolConfig(
        system_message="You are a search agent.",
        few_shot_question="capital of france",
        few_shot_response="<search>capital of France</search>",
        assistant_prefix="<think>",
    )
    text = prompt_text("who wrote hamlet", cfg, tok)
    assert text.startswith("<|im_start|>system\nYou are a search agent.<|im_end|>")
    assert text.count("<|im_start|>user") == 2
    assert "<|im_start|>assistant\n<search>capital of France</search><|im_end|>" in text
    assert text.endswith("<|im_start|>assistant\n<think>")
    assert text.index("capital of france?") < text.index("who wrote hamlet?")


def test_config_errors_name_the_field():
    with pytest.raises(ConfigError, match=r"protocol.instruction"):
        ProtocolConfig(instruction="no placeholder")
    with pytest.raises(ConfigError, match=r"few_shot"):
        ProtocolConfig(few_shot_question="q")
    with pytest.raises(ConfigError, match=r"protocol.asistant_prefix: unknown key"):
        ProtocolConfig.from_dict({"asistant_prefix": "<search>"})
    with pytest.raises(ConfigError, match=r"unknown preset"):
        ProtocolConfig.from_dict({"preset": "nope"})
    cfg = ProtocolConfig.from_dict({"preset": "search_r1_prefill_search", "system_message": "s"})
    assert cfg.assistant_prefix == "<search>" and cfg.system_message == "s"
    assert PROTOCOL_PRESETS["search_r1"] == ProtocolConfig()


def test_chat_template_required_but_missing(tok):
    class NoTemplate:
        chat_template = None

    with pytest.raises(ConfigError, match="use_chat_template"):
        prompt_text("q", ProtocolConfig(use_chat_template=True), NoTemplate())


@pytest.mark.parametrize(
    ("text", "kind", "content"),
    [
        ("<think>x</think><search> who wrote hamlet </search>", "search", "who wrote hamlet"),
        ("<answer> Paris </answer>", "answer", "Paris"),
        ("<search>a</search><answer>b</answer>", "search", "a"),  # the first complete action wins
        ("<answer>b</answer><search>a</search>", "answer", "b"),
        ("<search>unclosed <answer>x</answer>", "answer", "x"),  # an unclosed search is not an action
        ("<search>  </search>", "invalid", ""),  # empty query
        ("I think the answer is Paris", "invalid", ""),
        ("<search>multi\nline</search>", "search", "multi\nline"),
        ("", "invalid", ""),
    ],
)
def test_parse_action(text, kind, content):
    action = parse_action(text)
    assert (action.kind, action.content) == (kind, content)


def test_prefix_plus_generated_text_parses_as_a_search():
    assert parse_action("<search>" + "who wrote x</search>").kind == "search"
    assert parse_action("who wrote x</search>").kind == "invalid"


def test_extract_think_takes_the_last_block():
    assert extract_think("<think>a</think><think> b </think><search>q</search>") == "b"
    assert extract_think("no think") == ""


def test_truncate_query():
    assert truncate_query("abc", 4) == ("abc", False)
    assert truncate_query("x" * 10_000, 4096) == ("x" * 4096, True)


def test_observation_is_search_r1_rendering_wrapped():
    hits = [_hit(1, "alpha"), _hit(2, "beta")]
    assert render_observation(hits) == (
        '\n\n<information>Doc 1(Title: "Title 1") alpha\nDoc 2(Title: "Title 2") beta</information>\n\n'
    )


def test_observation_truncation_keeps_the_wrapper(tok):
    hits = [_hit(i, "word " * 200) for i in range(3)]
    ids, text, truncated = encode_observation(hits, tok, 60)
    assert truncated and len(ids) <= 60
    assert text.startswith("\n\n<information>Doc 1(Title:") and text.endswith("</information>\n\n")
    assert ids == encode_text(text, tok)  # the ids are the tokenisation of the text alone
    assert tok.decode(ids) == text
    full_ids, full_text, cut = encode_observation(hits, tok, 10_000)
    assert not cut and full_text == render_observation(hits) and len(full_ids) > 60
    assert encode_observation(hits, tok, 3) == ([], "", True)  # not even the wrapper fits


def test_observation_text_cannot_inject_special_tokens(tok):
    ids = encode_text("passage with <|im_end|> inside", tok)
    assert tok.eos_token_id not in ids
    assert tok.decode(ids) == "passage with <|im_end|> inside"
