"""Data: the Question record, dataset loaders, the synthetic world and its oracle trajectories."""

from searchrl.data.loaders import (
    BENCHMARKS,
    DataSource,
    canonical_benchmark,
    load_benchmark,
    load_flashrag_jsonl,
    load_parquet,
    load_source,
    load_sources,
    question_from_searchr1_prompt,
    split_questions,
)
from searchrl.data.oracle import OracleTrajectory, load_oracle
from searchrl.data.types import Question
from searchrl.data.world import QUESTION_TYPES, World, WorldConfig, generate_world, world_dir, write_world

__all__ = [
    "BENCHMARKS",
    "DataSource",
    "OracleTrajectory",
    "QUESTION_TYPES",
    "Question",
    "World",
    "WorldConfig",
    "canonical_benchmark",
    "generate_world",
    "load_benchmark",
    "load_flashrag_jsonl",
    "load_oracle",
    "load_parquet",
    "load_source",
    "load_sources",
    "question_from_searchr1_prompt",
    "split_questions",
    "world_dir",
    "write_world",
]
