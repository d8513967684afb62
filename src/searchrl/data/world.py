"""The built-in synthetic world: a fictional encyclopedia with questions, gold answers and oracle trajectories.

Everything runs on a fresh machine without downloads because of this module. The world is a small typed
graph of invented entities (countries, cities, people, organisations, works) with one-directional relations:

    work --written by--> person --born in--> city --located in--> country --capital--> city
    organisation --founded by--> person,  organisation --headquartered in--> city

Each entity gets one short wiki-style passage (about 40-80 words) that states its own facts only: a
person's passage never lists the works they wrote, so "Where was the author of X born?" really needs two
searches. Names are syllable-generated, checked against `COMMON_WORDS` (so no model has priors about them)
and unique after stemming (so BM25 resolves a name to its entity). Questions come in three kinds:

- single-hop: one fact about a named entity ("Where was Dravin Kolmar born?"); searching the question
  itself finds the entity's passage;
- bridge: two hops ("Where was the author of The Velmora Letters born?");
- comparison: two lookups and a comparison ("Who was born earlier, A or B?").

Splits are held out by construction. The world is three disjoint entity graphs in one corpus, one per split
(train, dev, test): every entity a question names, needs or answers with belongs to its split's graph, so no
passage that supports a dev or test question supports a train question (nor a test passage a dev question),
and no held-out answer is a name the training questions mention. The corpus pools all three graphs, so a
search still sees the other splits' passages as distractors.

The design targets a small model (SmolLM2-135M) on a CPU: short passages, short answers (names, years,
places), distinctive names, and a fixed phrasing per relation. Generation is deterministic for a seed (one
`random.Random`, no set iteration) and takes well under a second at the default size.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path

import Stemmer

from searchrl.data.oracle import observation_text
from searchrl.data.types import Question
from searchrl.errors import ConfigError
from searchrl.retrieval.base import Hit


def _read_common_words() -> frozenset[str]:
    """The words invented names avoid (``common_words.txt``, shipped with the package: see its header)."""
    text = resources.files("searchrl.data").joinpath("common_words.txt").read_text(encoding="utf-8")
    return frozenset(line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#"))


COMMON_WORDS: frozenset[str] = _read_common_words()

# Bump when the generator's output changes for a given config, so cached worlds are rebuilt.
WORLD_VERSION = 2
QUESTION_TYPES = ("single-hop", "bridge", "comparison")
SPLITS = ("train", "dev", "test")
DATA_SOURCE = "world"

# --- names ---------------------------------------------------------------------------------------------

_ONSETS = ("b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z",
           "br", "dr", "gr", "kr", "tr", "th", "st", "sk", "vr", "zh", "qu")
_VOWELS = ("a", "e", "i", "o", "u", "a", "e", "o")
_CODAS = ("", "", "", "n", "r", "l", "s", "m", "th", "k", "rn", "nd")
_ENDINGS = {
    "first": ("", "a", "o", "en", "is", "an", "ira", "ius"),
    "last": ("in", "ov", "er", "ek", "as", "ar", "el", "ani", "strom", "ez"),
    "city": ("a", "ovo", "ine", "eth", "or", "is", "mere", "vik", "ara"),
    "country": ("ia", "istan", "ora", "and", "essa", "ur"),
    "word": ("a", "o", "en", "is", "ar", "eth", "un", "ai"),
}


class NameMaker:
    """Invents pronounceable names that are not common English words and are unique after stemming."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used_stems: set[str] = set()
        # PyStemmer: the stemmer bm25s uses, so "unique" means unique to BM25 too
        self._stem = Stemmer.Stemmer("english").stemWord

    # Syllables before the ending: short names cost the small model fewer tokens.
    _SYLLABLES = {"first": (1, 1, 2), "last": (1, 2), "city": (1, 1, 2), "country": (1, 2), "word": (1, 1, 2)}

    def _candidate(self, kind: str) -> str:
        syllables = self.rng.choice(self._SYLLABLES[kind])
        word = "".join(
            self.rng.choice(_ONSETS) + self.rng.choice(_VOWELS) + self.rng.choice(_CODAS) for _ in range(syllables)
        )
        return (word + self.rng.choice(_ENDINGS[kind])).capitalize()

    def make(self, kind: str) -> str:
        for _ in range(10_000):
            name = self._candidate(kind)
            lower = name.lower()
            if not 4 <= len(name) <= 9 or lower in COMMON_WORDS:
                continue
            stem = self._stem(lower)
            if stem in self.used_stems or stem in COMMON_WORDS:
                continue
            self.used_stems.add(stem)
            return name
        raise ConfigError(f"could not invent a new unique {kind} name; the world is too large for the name space")


# --- entities ------------------------------------------------------------------------------------------

_AUTHOR_OCCUPATIONS = ("novelist", "poet", "playwright", "historian", "philosopher", "journalist")
_OTHER_OCCUPATIONS = ("painter", "chemist", "architect", "engineer", "physician", "astronomer", "merchant", "banker")
_GENRES = {
    "novelist": ("novel",),
    "poet": ("poetry collection",),
    "playwright": ("play",),
    "historian": ("history",),
    "philosopher": ("treatise",),
    "journalist": ("memoir", "essay collection"),
}
_TITLE_NOUNS = ("Letters", "Chronicles", "Garden", "Voyage", "Songs", "Tales", "Winter", "Mirror", "Lantern",
                "Harvest", "Orchard", "Tower", "Dreams", "Bridge", "Shadows", "Road", "Daughters", "Silence")
_ORG_KINDS = (
    ("Press", "publishing house"), ("Bank", "bank"), ("Institute", "research institute"),
    ("Company", "trading company"), ("Society", "learned society"), ("Museum", "museum"),
    ("Guild", "craft guild"), ("Foundation", "charitable foundation"), ("Records", "record label"),
    ("Railway", "railway company"), ("Shipyards", "shipbuilding firm"), ("Observatory", "observatory"),
)


@dataclass
class Entity:
    """One entity of the world; `facts` holds its typed relations (values are entity keys, years or words)."""

    key: str
    kind: str  # country | city | person | organisation | work
    name: str
    facts: dict = field(default_factory=dict)
    doc_id: str = ""
    passage: str = ""

    @property
    def short(self) -> str:
        """How a passage refers to the entity after its first mention (a person's surname)."""
        return self.facts.get("last", self.name)


@dataclass(frozen=True)
class WorldConfig:
    """Size and mix of the synthetic world. The defaults build in well under a second.

    The entity counts are those of the train split's graph. The dev and test graphs get the same counts scaled
    by their share of questions (as many questions per entity as train), grown where that is too small to
    supply their questions.
    """

    seed: int = 0
    countries: int = 12
    cities: int = 60
    people: int = 150
    organisations: int = 48
    works: int = 90
    train_questions: int = 1000
    dev_questions: int = 200
    # 500 test questions: the paired 95% interval of an EM gain narrows to about ±0.02-0.03.
    test_questions: int = 500
    # Shares of single-hop, bridge and comparison questions (normalised to sum 1).
    mix: tuple[float, float, float] = (0.5, 0.3, 0.2)
    # Oracle turns open with a short <think>…</think> (False: only the <search>/<answer> actions).
    oracle_think: bool = True

    def validate(self) -> None:
        for name in ("countries", "cities", "people", "organisations", "works"):
            if getattr(self, name) < 2:
                raise ConfigError(f"world.{name} must be at least 2 (got {getattr(self, name)})")
        if self.cities < self.countries:
            raise ConfigError(
                f"world.cities ({self.cities}) must be at least world.countries ({self.countries}): "
                "every country needs a capital city"
            )
        for split in SPLITS:
            if getattr(self, f"{split}_questions") < 0:
                raise ConfigError(f"world.{split}_questions must be >= 0 (got {getattr(self, f'{split}_questions')})")
        if len(self.mix) != 3 or any(m < 0 for m in self.mix) or sum(self.mix) <= 0:
            raise ConfigError(
                f"world.mix must be three non-negative shares (single-hop, bridge, comparison), got {self.mix}"
            )


@dataclass
class World:
    """A generated world: passages, the three question splits and their oracle trajectories.

    `split_of[doc_id]` is the split whose entity graph a passage belongs to.
    """

    config: WorldConfig
    entities: list[Entity]
    train: list[Question]
    dev: list[Question]
    test: list[Question]
    oracle_train: list[dict]
    oracle_dev: list[dict]
    oracle_test: list[dict]
    split_of: dict[str, str] = field(default_factory=dict)

    def questions(self, split: str) -> list[Question]:
        return getattr(self, split)

    def oracles(self, split: str) -> list[dict]:
        return getattr(self, f"oracle_{split}")

    def corpus_rows(self) -> list[dict]:
        return [_corpus_row(e) for e in self.entities]

    def hits(self) -> dict[str, Hit]:
        """Every passage as a retrieval `Hit`, by doc id."""
        return {e.doc_id: _hit(e) for e in self.entities}


def _hit(entity: Entity) -> Hit:
    # wiki-18 convention (FlashRAG's corpora, tests/fixtures/qa): contents = '"Title"\ntext'
    return Hit(doc_id=entity.doc_id, title=entity.name, text=entity.passage,
               contents=f'"{entity.name}"\n{entity.passage}', score=None)


def _corpus_row(entity: Entity) -> dict:
    hit = _hit(entity)
    return {"id": hit.doc_id, "title": hit.title, "text": hit.text, "contents": hit.contents}


_SIZE_FIELDS = ("countries", "cities", "people", "organisations", "works")


def _part_sizes(cfg: WorldConfig, scale: float) -> dict[str, int]:
    """Entity counts of one split's graph: the config's counts × `scale`, at least a valid minimal graph."""
    sizes = {name: max(2, math.ceil(getattr(cfg, name) * scale)) for name in _SIZE_FIELDS}
    sizes["cities"] = max(sizes["cities"], sizes["countries"])  # every country needs a capital
    sizes["people"] = max(sizes["people"], 4)  # authors (even indices) and others (odd indices)
    return sizes


def _part_scale(cfg: WorldConfig, n_questions: int, counts: Sequence[int]) -> float:
    """How much of the config's graph one split needs: its share of questions, grown until the expected pools of
    distinct single-hop and bridge questions hold its questions with a margin (pools grow linearly with scale)."""
    share = n_questions / cfg.train_questions if cfg.train_questions else 0.0
    k, c, p, o, w = (getattr(cfg, name) for name in _SIZE_FIELDS)
    single = 3 * p + 2 * w + 3 * o + 2 * c + k  # relations of _SINGLE per entity kind
    bridge = 2 * w + 3 * o + p + (c - k)  # relations of _BRIDGE (a capital has no country-capital bridge)
    return max(share, 1.25 * counts[0] / single, 1.25 * counts[1] / bridge)


def _build_entities(cfg: WorldConfig, sizes: dict[str, int], rng: random.Random, names: NameMaker,
                    prefix: str) -> dict[str, list[Entity]]:
    """One split's entity graph; keys carry the split's `prefix`, relations stay inside the graph."""
    countries = [Entity(f"{prefix}K{i}", "country", names.make("country")) for i in range(sizes["countries"])]
    cities = [Entity(f"{prefix}C{i}", "city", names.make("city")) for i in range(sizes["cities"])]
    # Every country gets at least one city (its capital), the rest are spread at random.
    for i, city in enumerate(cities):
        country = countries[i] if i < len(countries) else rng.choice(countries)
        city.facts.update(country=country.key, founded=rng.randint(900, 1700),
                          river=names.make("word"), population=rng.randrange(20, 900) * 1000)
    for i, country in enumerate(countries):
        own = [c for c in cities if c.facts["country"] == country.key]
        country.facts.update(capital=cities[i].key, independence=rng.randint(1700, 1950),
                             cities=[c.key for c in own], language=names.make("word") + "ic")

    people = []
    for i in range(sizes["people"]):
        first, last = names.make("first"), names.make("last")
        born = rng.randint(1780, 1960)
        facts = {"first": first, "last": last, "born": born, "birthplace": rng.choice(cities).key,
                 "occupation": rng.choice(_AUTHOR_OCCUPATIONS if i % 2 == 0 else _OTHER_OCCUPATIONS)}
        death = born + rng.randint(45, 92)
        if death <= 2020:
            facts["died"] = death
        if rng.random() < 0.5:
            facts["moved_to"] = rng.choice([c.key for c in cities if c.key != facts["birthplace"]])
        people.append(Entity(f"{prefix}P{i}", "person", f"{first} {last}", facts))

    authors = [p for p in people if p.facts["occupation"] in _AUTHOR_OCCUPATIONS]
    works = []
    for i in range(sizes["works"]):
        author = authors[i % len(authors)] if i < len(authors) else rng.choice(authors)
        word = names.make("word")
        noun = rng.choice(_TITLE_NOUNS)
        title = rng.choice((f"The {word} {noun}", f"{word} {noun}", f"The {noun} of {word}"))
        genre = rng.choice(_GENRES[author.facts["occupation"]])
        year = author.facts["born"] + rng.randint(20, 44)
        works.append(Entity(f"{prefix}W{i}", "work", title, {"author": author.key, "year": year, "genre": genre,
                                                      "setting": rng.choice(cities).key, "word": word}))

    organisations = []
    for i in range(sizes["organisations"]):
        suffix, description = rng.choice(_ORG_KINDS)
        founder = rng.choice(people)
        facts = {"founder": founder.key, "year": founder.facts["born"] + rng.randint(22, 44),
                 "hq": rng.choice(cities).key, "description": description,
                 "employees": rng.randrange(2, 400) * 10}
        organisations.append(Entity(f"{prefix}O{i}", "organisation", f"{names.make('word')} {suffix}", facts))
    return {"country": countries, "city": cities, "person": people, "organisation": organisations, "work": works}


# Sentences that carry no asked-about fact: they bring passages to a realistic length (about 40-60 words).
_FILLERS = {
    "person": ("{e} was known for a careful, patient style and for long walks.",
               "Colleagues described {e} as quiet, exacting and generous with students.",
               "{e} kept detailed diaries that are now held in a public archive.",
               "{e} travelled widely and wrote many letters to friends abroad.",
               "A small museum displays some of the personal belongings of {e}."),
    "work": ("Critics praised its clear language and its portrait of ordinary life.",
             "It sold slowly at first but was reprinted many times.",
             "It has been translated into several languages.",
             "A later edition added a long preface and several illustrations.",
             "It is still read in schools and discussed in reading circles."),
    "organisation": ("It is known for its annual public lectures.",
                     "Its archive of early records is open to researchers.",
                     "It was reorganised twice during the last century.",
                     "It publishes a short yearly report on its work.",
                     "Its main building has a large reading room and a garden."),
    "city": ("The old town of {e} is known for its stone bridges and covered markets.",
             "The economy of {e} rests on trade, river transport and small workshops.",
             "A spring fair has been held in the main square of {e} for centuries.",
             "{e} has a university, two theatres and a botanical garden.",
             "The harbour and railway station of {e} connect it with the rest of the region."),
    "country": ("The country is known for its mountain passes and its long coastline.",
                "Most of its people live in the river valleys of the north.",
                "Its economy is based on farming, fishing and trade.",
                "The country is divided into several provinces."),
}


def _a(noun: str) -> str:
    return ("an " if noun[0] in "aeiou" else "a ") + noun


def _write_passages(groups: dict[str, list[Entity]], rng: random.Random) -> list[Entity]:
    """One passage per entity, stating only the entity's own facts (see the module docstring)."""
    by_key = {e.key: e for group in groups.values() for e in group}

    def name(key: str) -> str:
        return by_key[key].name

    ordered = [e for kind in ("person", "work", "organisation", "city", "country") for e in groups[kind]]
    rng.shuffle(ordered)  # doc ids carry no information about the kind
    for doc_id, e in enumerate(ordered):
        e.doc_id = str(doc_id)
        f = e.facts
        fillers = [t.format(e=e.short) for t in rng.sample(_FILLERS[e.kind], 2)]
        if e.kind == "person":
            s = [f"{e.name} was {_a(f['occupation'])} born in {name(f['birthplace'])} in {f['born']}."]
            if "moved_to" in f:
                s.append(f"As a young adult, {e.short} moved to {name(f['moved_to'])}.")
            s += fillers
            s.append(f"{e.short} died in {f['died']}." if "died" in f else f"{e.short} retired in {f['born'] + 70}.")
        elif e.kind == "work":
            s = [f"{e.name} is {_a(f['genre'])} written by {name(f['author'])} and first published in {f['year']}.",
                 f"The {f['genre']} is set in {name(f['setting'])}.", *fillers]
        elif e.kind == "organisation":
            s = [f"{e.name} is {_a(f['description'])} founded by {name(f['founder'])} in {f['year']}.",
                 f"It is headquartered in {name(f['hq'])} and employs about {f['employees']} people.", *fillers]
        elif e.kind == "city":
            # The name is repeated: cities are mentioned in many other passages, and BM25 should still rank
            # the city's own passage first for a question about it.
            s = [f"{e.name} is a city in {name(f['country'])}, founded in {f['founded']}.",
                 f"{e.name} lies on the {f['river']} river and has about {f['population']:,} inhabitants.", *fillers]
        else:  # country
            others = [name(c) for c in f["cities"] if c != f["capital"]][:2]
            s = [f"{e.name} is a country whose capital is {name(f['capital'])}.",
                 f"{e.name} became independent in {f['independence']}, and its official language is {f['language']}."]
            if others:
                s.append(f"Other cities in {e.name} include {' and '.join(others)}.")
            s += fillers
        e.passage = " ".join(s)
    return ordered


# --- questions -----------------------------------------------------------------------------------------

# Single-hop relations: (entity kind, fact, question template, answer kind, oracle statement template).
# The statement is what the oracle's <think> says after reading the passage.
_SINGLE = (
    ("person", "birthplace", "Where was {e} born?", "{e} was born in {a}."),
    ("person", "born", "In what year was {e} born?", "{e} was born in {a}."),
    ("person", "occupation", "What was the occupation of {e}?", "{e} was {an}."),
    ("work", "author", "Who wrote {e}?", "{e} was written by {a}."),
    ("work", "year", "In what year was {e} first published?", "{e} was first published in {a}."),
    ("organisation", "founder", "Who founded {e}?", "{e} was founded by {a}."),
    ("organisation", "hq", "In which city is {e} headquartered?", "{e} is headquartered in {a}."),
    ("organisation", "year", "In what year was {e} founded?", "{e} was founded in {a}."),
    ("city", "country", "In which country is the city of {e}?", "{e} is in {a}."),
    ("city", "founded", "In what year was the city of {e} founded?", "{e} was founded in {a}."),
    ("country", "capital", "What is the capital of {e}?", "The capital of {e} is {a}."),
)
# What the oracle looks for, by (kind, fact): "I need to find {need} of {e}."
_NEED = {
    ("person", "birthplace"): "where {e} was born", ("person", "born"): "when {e} was born",
    ("person", "occupation"): "the occupation of {e}", ("work", "author"): "who wrote {e}",
    ("work", "year"): "when {e} was published", ("organisation", "founder"): "who founded {e}",
    ("organisation", "hq"): "where {e} is headquartered", ("organisation", "year"): "when {e} was founded",
    ("city", "country"): "which country {e} is in", ("city", "founded"): "when {e} was founded",
    ("country", "capital"): "the capital of {e}",
}
# Bridge questions: first hop (kind, fact) gives an entity, second hop fact on it gives the answer.
_BRIDGE = (
    ("work", "author", "birthplace", "Where was the author of {e} born?"),
    ("work", "author", "born", "In what year was the author of {e} born?"),
    ("organisation", "founder", "birthplace", "Where was the founder of {e} born?"),
    ("organisation", "founder", "born", "In what year was the founder of {e} born?"),
    ("organisation", "hq", "country", "In which country is the headquarters of {e}?"),
    ("person", "birthplace", "country", "In which country was {e} born?"),
    ("city", "country", "capital", "What is the capital of the country where {e} is located?"),
)
# Comparisons: (kind, year fact, question template with {x} and {y}, statement template, verb phrase).
_COMPARE = (
    ("person", "born", "Who was born earlier, {x} or {y}?", "{e} was born in {a}.", "was born earlier"),
    ("organisation", "year", "Which was founded earlier, {x} or {y}?", "{e} was founded in {a}.", "was founded earlier"),
    ("work", "year", "Which was published earlier, {x} or {y}?", "{e} was first published in {a}.", "was published earlier"),
    ("city", "founded", "Which city was founded earlier, {x} or {y}?", "{e} was founded in {a}.", "was founded earlier"),
)


@dataclass
class _Draft:
    """A question before it is assigned to a split, with the oracle's plan: one (query, doc, think) per search."""

    type: str
    text: str
    answer: str
    relation: str
    steps: list[tuple[str, str, str]]  # (thought before the search, query, doc id)
    final_thought: str


def _value(by_key: dict[str, Entity], value: object) -> str:
    return by_key[value].name if isinstance(value, str) and value in by_key else str(value)


def _single_hop_pool(groups: dict[str, list[Entity]], by_key: dict[str, Entity]) -> list[_Draft]:
    pool = []
    for kind, fact, template, statement in _SINGLE:
        for e in groups[kind]:
            answer = _value(by_key, e.facts[fact])
            need = _NEED[(kind, fact)].format(e=e.name)
            pool.append(_Draft("single-hop", template.format(e=e.name), answer, f"{kind}.{fact}",
                               [(f"I need to find {need}.", e.name, e.doc_id)],
                               statement.format(e=e.name, a=answer, an=_a(answer))))
    return pool


def _bridge_pool(groups: dict[str, list[Entity]], by_key: dict[str, Entity]) -> list[_Draft]:
    single = {(k, f): s for k, f, _, s in _SINGLE}
    pool = []
    for kind, fact1, fact2, template in _BRIDGE:
        for e in groups[kind]:
            mid = by_key[e.facts[fact1]]
            if fact2 == "capital" and e.key == mid.facts["capital"]:
                continue  # "the capital of the country where X is", X being that capital: not a real bridge
            answer = _value(by_key, mid.facts[fact2])
            first = single[(kind, fact1)].format(e=e.name, a=mid.name)
            need2 = _NEED[(mid.kind, fact2)].format(e=mid.name)
            pool.append(_Draft(
                "bridge", template.format(e=e.name), answer, f"{kind}.{fact1}.{fact2}",
                [(f"I need to find {_NEED[(kind, fact1)].format(e=e.name)} first.", e.name, e.doc_id),
                 (f"{first} Now I need to find {need2}.", mid.name, mid.doc_id)],
                single[(mid.kind, fact2)].format(e=mid.name, a=answer, an=_a(answer))))
    return pool


def _comparison_pool(groups: dict[str, list[Entity]], rng: random.Random, want: int) -> list[_Draft]:
    """Random pairs with different years (enough for `want` plus margin; all pairs would be quadratic)."""
    pool: list[_Draft] = []
    seen: set[tuple[str, str]] = set()
    per_relation = want // len(_COMPARE) + 20
    for kind, fact, template, statement, verb in _COMPARE:
        entities = groups[kind]
        made, attempts = 0, 0
        while made < per_relation and attempts < per_relation * 50:
            attempts += 1
            x, y = rng.sample(entities, 2)
            if x.facts[fact] == y.facts[fact] or (x.key, y.key) in seen or (y.key, x.key) in seen:
                continue
            seen.add((x.key, y.key))
            winner = x if x.facts[fact] < y.facts[fact] else y
            want_what = {"born": "birth years", "year": "founding years" if kind == "organisation" else
                         "publication years", "founded": "founding years"}[fact]
            pool.append(_Draft(
                "comparison", template.format(x=x.name, y=y.name), winner.name, f"{kind}.{fact}.compare",
                [(f"I need the {want_what} of {x.name} and {y.name}.", x.name, x.doc_id),
                 (statement.format(e=x.name, a=x.facts[fact]), y.name, y.doc_id)],
                f"{statement.format(e=y.name, a=y.facts[fact])} So {winner.name} {verb}."))
            made += 1
    return pool


def _split_counts(total: int, mix: Sequence[float]) -> list[int]:
    """Largest-remainder allocation of `total` over the mix shares (sums exactly to total)."""
    shares = [m / sum(mix) * total for m in mix]
    counts = [int(s) for s in shares]
    order = sorted(range(len(mix)), key=lambda i: shares[i] - counts[i], reverse=True)
    for i in order[: total - sum(counts)]:
        counts[i] += 1
    return counts


def _oracle_record(q: Question, draft: _Draft, world_hits: dict[str, Hit], think: bool) -> dict:
    turns: list[list] = []
    for thought, query, doc_id in draft.steps:
        text = (f"<think>{thought}</think>\n" if think else "") + f"<search>{query}</search>"
        turns.append([text, False])
        turns.append([observation_text([world_hits[doc_id]]), True])
    final = (f"<think>{draft.final_thought}</think>\n" if think else "") + f"<answer>{draft.answer}</answer>"
    turns.append([final, False])
    return {"id": q.id, "data_source": q.data_source, "question": q.question, "golden_answers": q.golden_answers,
            "type": draft.type, "queries": [s[1] for s in draft.steps], "doc_ids": [s[2] for s in draft.steps],
            "turns": turns}


def generate_world(config: WorldConfig | None = None) -> World:
    """Generate the world for `config` in memory (deterministic for `config.seed`).

    Each split gets its own entity graph (see the module docstring) and draws its questions from that graph's
    pools only; the passages of all graphs are shuffled into one corpus.
    """
    cfg = config or WorldConfig()
    cfg.validate()
    rng = random.Random(cfg.seed)
    names = NameMaker(rng)  # one name space: names are unique across the splits' graphs too
    per_split = {split: _split_counts(getattr(cfg, f"{split}_questions"), cfg.mix) for split in SPLITS}
    graphs = {}
    for split in SPLITS:
        scale = 1.0 if split == "train" else _part_scale(cfg, getattr(cfg, f"{split}_questions"), per_split[split])
        graphs[split] = _build_entities(cfg, _part_sizes(cfg, scale), rng, names, prefix=split[:2])
    merged = {kind: [e for split in SPLITS for e in graphs[split][kind]] for kind in graphs["train"]}
    entities = _write_passages(merged, rng)
    by_key = {e.key: e for e in entities}
    split_of = {e.doc_id: split for split in SPLITS for group in graphs[split].values() for e in group}

    hits = {e.doc_id: _hit(e) for e in entities}
    questions: dict[str, list[Question]] = {}
    oracles: dict[str, list[dict]] = {}
    for split in SPLITS:
        groups = graphs[split]
        counts = per_split[split]
        pools = [_single_hop_pool(groups, by_key), _bridge_pool(groups, by_key),
                 _comparison_pool(groups, rng, counts[2])]
        drafts: list[_Draft] = []
        for qtype, pool, need in zip(QUESTION_TYPES, pools, counts):
            if len(pool) < need:
                raise ConfigError(
                    f"the world's {split} graph has {len(pool)} distinct {qtype} questions but the split needs "
                    f"{need}: raise the entity counts (world.people, world.works, ...) or lower the question "
                    "counts or mix"
                )
            rng.shuffle(pool)
            drafts += pool[:need]
        rng.shuffle(drafts)
        questions[split], oracles[split] = [], []
        for i, d in enumerate(drafts):
            q = Question(
                id=f"{split}-{i:05d}", question=d.text, golden_answers=[d.answer], data_source=DATA_SOURCE,
                metadata={"type": d.type, "relation": d.relation,
                          "support_doc_ids": list(dict.fromkeys(s[2] for s in d.steps))},
            )
            questions[split].append(q)
            oracles[split].append(_oracle_record(q, d, hits, cfg.oracle_think))
    return World(cfg, entities, questions["train"], questions["dev"], questions["test"],
                 oracles["train"], oracles["dev"], oracles["test"], split_of)


# --- files ---------------------------------------------------------------------------------------------

WORLD_MANIFEST = "world.json"  # written last: a folder with it holds a whole world
WORLD_FILES = ("corpus.jsonl", *(f"{split}.jsonl" for split in SPLITS),
               *(f"oracle_{split}.jsonl" for split in SPLITS), WORLD_MANIFEST)


def question_row(q: Question) -> dict:
    """A Question as a FlashRAG JSONL row."""
    return {"id": q.id, "question": q.question, "golden_answers": q.golden_answers, "metadata": q.metadata}


def _write_jsonl(path: Path, rows: Iterable[dict]) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def write_world(world: World, out_dir: str | Path) -> Path:
    """Write the world's files into `out_dir` (created if needed); each file is written atomically."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    manifest = {
        "version": WORLD_VERSION,
        "config": asdict(world.config),
        "counts": {
            "passages": len(world.entities),
            **{f"entities/{k}": sum(e.kind == k for e in world.entities)
               for k in ("country", "city", "person", "organisation", "work")},
            **{f"passages/{split}": sum(v == split for v in world.split_of.values()) for split in SPLITS},
            **{split: len(world.questions(split)) for split in SPLITS},
            **{f"{split}/{t}": sum(q.metadata["type"] == t for q in world.questions(split))
               for split in SPLITS for t in QUESTION_TYPES},
        },
    }
    contents: dict[str, list[dict] | dict] = {"corpus.jsonl": world.corpus_rows()}
    contents.update({f"{split}.jsonl": [question_row(q) for q in world.questions(split)] for split in SPLITS})
    contents.update({f"oracle_{split}.jsonl": world.oracles(split) for split in SPLITS})
    for name, rows in contents.items():
        tmp = out / f".{name}.tmp"
        _write_jsonl(tmp, rows)  # type: ignore[arg-type]
        os.replace(tmp, out / name)
    tmp = out / ".world.json.tmp"
    tmp.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, out / "world.json")
    return out


def cache_root() -> Path:
    """`$SEARCHRL_CACHE` or `~/.cache/searchrl`."""
    return Path(os.environ.get("SEARCHRL_CACHE") or Path.home() / ".cache" / "searchrl")


def world_dir(seed: int = 0, config: WorldConfig | None = None, cache_dir: str | Path | None = None) -> Path:
    """The folder of the world for `seed` (default config), generated into the cache on first use.

    The folder is built in a temporary sibling and renamed into place, so a concurrent or interrupted
    build never leaves a half-written world behind.
    """
    cfg = config or WorldConfig(seed=seed)
    if config is not None and config.seed != seed:
        cfg = WorldConfig(**{**asdict(config), "seed": seed})
    default = WorldConfig(seed=cfg.seed)
    tag = f"seed{cfg.seed}" if cfg == default else f"seed{cfg.seed}-{_config_digest(cfg)}"
    root = Path(cache_dir) if cache_dir is not None else cache_root() / "worlds"
    final = root / f"v{WORLD_VERSION}-{tag}"
    if all((final / f).exists() for f in WORLD_FILES):
        return final
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}-", dir=root))
    try:
        write_world(generate_world(cfg), tmp)
        try:
            os.rename(tmp, final)
        except OSError:
            if not all((final / f).exists() for f in WORLD_FILES):  # not a concurrent builder's finished copy
                shutil.rmtree(final, ignore_errors=True)
                os.rename(tmp, final)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return final


def _config_digest(cfg: WorldConfig) -> str:
    return hashlib.sha1(json.dumps(asdict(cfg), sort_keys=True).encode()).hexdigest()[:10]
