"""Loaders that wrap or stand in for torch's DataLoader, under record, each
script's own counts the ground truth: Accelerate's prepared loaders (one
fetching ahead, one dispatching process 0's batches to every rank),
torchdata's StatefulDataLoader (torchtitan's) resumed mid-epoch, a
DataLoader drained by a background thread (prefetch_generator's shape), and
DataLoader subclasses with an __iter__ of their own (the DataLoaderX,
ultralytics' InfiniteDataLoader)."""

import json

import pytest
from conftest import (
    PYTHON,
    batches_per_step,
    launch_ranks,
    meta,
    needs,
    report_json,
    trainprof,
    words,
)
from test_loops import COMMON, record

# prefetch_generator's BackgroundGenerator: a thread drains an iterable into
# a queue, the training thread takes from the queue
BACKGROUND = """
import threading, queue
class BackgroundGenerator(threading.Thread):
    def __init__(self, generator, max_prefetch=4):
        super().__init__(daemon=True)
        self.queue, self.generator = queue.Queue(max_prefetch), generator
        self.start()
    def run(self):
        for item in self.generator:
            self.queue.put(item)
        self.queue.put(None)
    def __iter__(self):
        return self
    def __next__(self):
        item = self.queue.get()
        if item is None:
            raise StopIteration
        return item
"""


def training_loop(epochs):
    """A loop of `epochs` passes over batches() (the script defines it),
    one update a batch, printing its updates."""
    return f"""
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
updates = 0
for epoch in range({epochs}):
    for x, y in batches():
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        updates += 1
print(json.dumps({{"updates": updates}}))
"""


def epochs_of(rep):
    """The report's epochs as (epoch, steps, samples)."""
    return [(e["epoch"], e["steps"], e["samples"]) for e in rep["epochs"]]


def test_a_loader_prefetched_on_a_background_thread_has_its_steps(tmp_path, run_file):
    """A DataLoader drained by a background thread into a queue: the fetches
    ran ahead on that thread and no step was found at all; the training
    thread's updates are the steps now, and its batches the samples (the
    passes are not epochs: the fetching runs ahead of them)."""
    truth, rep = record(
        tmp_path,
        run_file,
        BACKGROUND
        + """
loader = DataLoader(data(160), batch_size=8, shuffle=True)
def batches():
    return BackgroundGenerator(loader)
"""
        + training_loop(2),
    )
    assert truth["updates"] == 40
    steps = rep["steps"][0]
    assert steps["count"] == truth["updates"]
    assert (steps["samples"], steps["batches_per_step"]) == (320, 1)
    assert rep["run"]["meta"]["fact.loader.prefetched"] == "1" and rep["epochs"] == []
    text = words(trainprof("report", run_file).stdout)
    assert "fetched on another thread than the one that trained" in text


def test_a_dataloader_subclass_s_own_iter_is_its_pass(tmp_path, run_file):
    """The DataLoaderX of many repositories: a DataLoader subclass whose
    __iter__ hands out BackgroundGenerator(super().__iter__()). Its own
    __iter__ is the pass: epochs as the script runs them, the training
    thread's wait on the queue its dataloader_next, and the background
    thread's fetches no step of their own (before: no epochs, steps from the
    updates only)."""
    truth, rep = record(
        tmp_path,
        run_file,
        BACKGROUND
        + """
class DataLoaderX(DataLoader):
    def __iter__(self):
        return BackgroundGenerator(super().__iter__())
loader = DataLoaderX(data(160), batch_size=8, shuffle=True)
def batches():
    return loader
"""
        + training_loop(2),
    )
    assert truth["updates"] == 40
    steps = rep["steps"][0]
    assert (steps["count"], steps["samples"], steps["batches_per_step"]) == (40, 320, 1)
    assert epochs_of(rep) == [
        (0, 20, 160),
        (1, 20, 160),
    ]
    assert "fact.loader.prefetched" not in rep["run"]["meta"]
    nexts = [t for t in rep["timings"] if t["name"] == "dataloader_next"]
    assert [t["count"] for t in nexts] == [42], nexts  # 2 x 20 and each pass's end


def test_an_infinite_loader_s_passes_are_its_epochs(tmp_path, run_file):
    """Ultralytics' (and YOLOv5's, timm's) InfiniteDataLoader: its iterator is
    made once, in __init__, over a repeating sampler, and its __iter__ is a
    generator of len(self) batches from it. Its one torch pass never ended,
    so the run was one epoch; each call of its own __iter__ is a pass now,
    its validation loader's too. reset() (ultralytics' close_mosaic) makes a
    new persistent iterator through _get_iterator(); a subclass of it with
    an __iter__ of its own calling the base's stays one pass."""
    truth, rep = record(
        tmp_path,
        run_file,
        """
class _RepeatSampler:
    def __init__(self, sampler):
        self.sampler = sampler
    def __iter__(self):
        while True:
            yield from iter(self.sampler)
class InfiniteDataLoader(DataLoader):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        object.__setattr__(self, "batch_sampler", _RepeatSampler(self.batch_sampler))
        self.iterator = super().__iter__()
    def __len__(self):
        return len(self.batch_sampler.sampler)
    def __iter__(self):
        for _ in range(len(self)):
            yield next(self.iterator)
    def reset(self):
        self.iterator = self._get_iterator()
class Counted(InfiniteDataLoader):
    def __iter__(self):
        self.passes = getattr(self, "passes", 0) + 1
        yield from super().__iter__()
train_loader = Counted(data(160), batch_size=8, shuffle=True)
val_loader = InfiniteDataLoader(data(64), batch_size=16, shuffle=False)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
updates = samples = 0
for epoch in range(3):
    if epoch == 2:
        train_loader.reset()
    model.train()
    for x, y in train_loader:
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        updates += 1
        samples += len(x)
    model.eval()
    with torch.no_grad():
        for x, y in val_loader:
            model(x)
print(json.dumps({"updates": updates, "samples": samples, "passes": train_loader.passes}))
""",
    )
    assert (truth["updates"], truth["samples"], truth["passes"]) == (60, 480, 3)
    steps = rep["steps"][0]
    assert (steps["count"], steps["samples"], steps["batches_per_step"]) == (60, 480, 1)
    assert epochs_of(rep) == [
        (0, 20, 160),
        (1, 20, 160),
        (2, 20, 160),
    ]
    counts = {t["name"]: t["count"] for t in rep["timings"] if t["rank"] == -1}
    assert counts["evaluate"] == 3
    # 20 + 4 fetches an epoch and each pass's end: none timed twice
    assert counts["dataloader_next"] == 3 * (20 + 1 + 4 + 1), counts


def test_accelerate_s_loader_that_fetches_ahead_counts_each_step_s_batches(tmp_path, run_file):
    """Accelerate's prepared loader (DataLoaderShard) fetches each batch one
    ahead of the one it hands out: counted at the fetch, each epoch's first
    step had three micro-batches and its last one ("1.98 micro-batches" for
    2). Counted as handed out, every step has its two."""
    needs("accelerate")
    truth, rep = record(
        tmp_path,
        run_file,
        """
from accelerate import Accelerator
accelerator = Accelerator(cpu=True, gradient_accumulation_steps=2)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
model, opt, loader = accelerator.prepare(model, opt, DataLoader(data(256), batch_size=16))
updates = 0
for epoch in range(2):
    for x, y in loader:
        with accelerator.accumulate(model):
            accelerator.backward(nn.functional.cross_entropy(model(x), y))
            opt.step()
            opt.zero_grad()
            updates += accelerator.sync_gradients
print(json.dumps({"updates": updates}))
""",
    )
    assert truth["updates"] == 16
    assert rep["steps"][0]["count"] == truth["updates"]
    assert [(e["steps"], e["samples"], e["batches"]) for e in rep["epochs"]] == [
        (8, 256, 16),
        (8, 256, 16),
    ]
    assert batches_per_step(run_file) == [[16, 16]] * 16
    steps = rep["steps"][0]
    assert (steps["batches_per_step"], steps["samples_per_step"]) == (2, 32)


def test_accelerate_s_dispatching_loader_counts_each_rank_s_slice(tmp_path, run_file):
    """Accelerate's loader for an IterableDataset (DataLoaderDispatcher, a
    Trainer's on a streaming dataset too): process 0 fetches every process's
    batches, a round ahead, and broadcasts them; each process is handed its
    slice. Counted at the wrapped loader's fetches, rank 0 had the whole
    job's 500 samples and the wrong steps' batches, rank 1 no step at all.
    Counted as each rank is handed its batch, both ranks have their own 8
    steps of two batches."""
    needs("accelerate")
    script = tmp_path / "dispatch.py"
    script.write_text(
        COMMON
        + """
import pathlib
from torch.utils.data import IterableDataset
from accelerate import Accelerator
class Stream(IterableDataset):
    def __iter__(self):  # 250 samples: each epoch's last round 13 of them a rank
        g = torch.Generator().manual_seed(0)
        for _ in range(250):
            yield torch.randn(16, generator=g), torch.randint(0, 4, (), generator=g)
accelerator = Accelerator(cpu=True, gradient_accumulation_steps=2)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
model, opt, loader = accelerator.prepare(model, opt, DataLoader(Stream(), batch_size=16))
assert type(loader).__name__ == "DataLoaderDispatcher"
updates, sizes = 0, []
for epoch in range(2):
    for x, y in loader:
        sizes.append(len(x))
        with accelerator.accumulate(model):
            accelerator.backward(nn.functional.cross_entropy(model(x), y))
            opt.step()
            opt.zero_grad()
            updates += accelerator.sync_gradients
truth = {"updates": updates, "samples": sum(sizes), "batches": len(sizes)}
pathlib.Path(sys.argv[1], f"{accelerator.process_index}.json").write_text(json.dumps(truth))
"""
    )
    r = trainprof(
        "record",
        "-q",
        "-o",
        run_file,
        "--",
        *launch_ranks(2, PYTHON, script, tmp_path),
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    rep = report_json(run_file)
    for rank in (0, 1):
        truth = json.loads((tmp_path / f"{rank}.json").read_text())
        assert (truth["updates"], truth["samples"], truth["batches"]) == (8, 250, 16)
        steps = next(s for s in rep["steps"] if s["rank"] == rank)
        assert (steps["count"], steps["samples"], steps["batches"]) == (8, 250, 16), rank
        assert steps["batches_per_step"] == 2
        epochs = [
            (e["steps"], e["samples"], e["batches"]) for e in rep["epochs"] if e["rank"] == rank
        ]
        assert epochs == [(4, 125, 8), (4, 125, 8)], rank


def test_torchdata_s_stateful_loader_has_its_epochs_and_resumes(tmp_path, run_file):
    """torchdata's StatefulDataLoader (torchtitan's) makes its own iter():
    its passes had no epochs, and its steps came from the updates alone. A
    pass left after 5 batches whose state a new loader resumes from (its
    other 15), then a whole epoch: three passes of the steps each holds."""
    needs("torchdata")
    truth, rep = record(
        tmp_path,
        run_file,
        """
from torchdata.stateful_dataloader import StatefulDataLoader
dataset = data(160)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
updates = 0
def train(loader, stop=None):
    global updates
    for i, (x, y) in enumerate(loader):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        updates += 1
        if i + 1 == stop:
            return loader.state_dict()
state = train(StatefulDataLoader(dataset, batch_size=8), stop=5)
resumed = StatefulDataLoader(dataset, batch_size=8)
resumed.load_state_dict(state)
train(resumed)
train(resumed)
print(json.dumps({"updates": updates}))
""",
    )
    assert truth["updates"] == 5 + 15 + 20
    assert rep["steps"][0]["count"] == truth["updates"]
    assert [(e["steps"], e["samples"], e["batches"]) for e in rep["epochs"]] == [
        (5, 40, 5),
        (15, 120, 15),
        (20, 160, 20),
    ]


# PyG's sampler of the seeds alone, nodes or the links' own nodes (its
# NeighborLoader's sampler needs pyg-lib, a build of its own)
SEEDS_ALONE = """
from torch_geometric.data import Data
from torch_geometric.sampler import BaseSampler, SamplerOutput
class SeedsAlone(BaseSampler):
    def sample_from_nodes(self, index, **kwargs):
        empty = torch.empty(0, dtype=torch.long)
        return SamplerOutput(node=index.node, row=empty, col=empty, edge=empty,
                             metadata=(index.input_id, index.time))
    def sample_from_edges(self, index, neg_sampling=None):
        n = index.row.numel()
        node, inverse = torch.unique(torch.cat([index.row, index.col]), return_inverse=True)
        empty = torch.empty(0, dtype=torch.long)
        return SamplerOutput(node=node, row=empty, col=empty, edge=empty,
                             metadata=(index.input_id, torch.stack([inverse[:n], inverse[n:]]),
                                       index.label, index.time))
"""


def test_a_loader_whose_get_iterator_wraps_torch_s_has_its_steps(tmp_path, run_file):
    """PyG's NodeLoader (under NeighborLoader; LinkLoader likewise) wraps
    torch's iterator in its DataLoaderIterator, a filter on each batch,
    where the graph is on a GPU (filter_per_worker=False, asked here): its
    __next__ is not torch's, and a GNN training had no step at all. The
    wrapper is the pass now, and its mini-batches (Data objects, no tensor
    first) count their batch_size seed nodes. The sampler keeps each seed
    alone: NeighborLoader's own needs pyg-lib, a build of its own."""
    needs("torch_geometric")
    truth, rep = record(
        tmp_path,
        run_file,
        SEEDS_ALONE
        + """
from torch_geometric.loader import NodeLoader
graph = Data(x=torch.randn(160, 16), y=torch.randint(0, 4, (160,)),
             edge_index=torch.empty(2, 0, dtype=torch.long))
loader = NodeLoader(graph, node_sampler=SeedsAlone(), batch_size=8, shuffle=True,
                    filter_per_worker=False)
def batches():
    return ((b.x, b.y) for b in loader)
"""
        + training_loop(3),
    )
    assert truth["updates"] == 60
    steps = rep["steps"][0]
    assert (steps["count"], steps["samples"], steps["batches_per_step"]) == (60, 480, 1)
    assert epochs_of(rep) == [
        (0, 20, 160),
        (1, 20, 160),
        (2, 20, 160),
    ]
    nexts = [t["count"] for t in rep["timings"] if t["name"] == "dataloader_next"]
    assert nexts == [63], rep["timings"]  # each fetch once, and each pass's end


def test_a_link_loader_s_mini_batches_count_their_seed_edges(tmp_path, run_file):
    """PyG's LinkLoader (under LinkNeighborLoader) keeps no batch_size on
    its mini-batches: a link prediction's steps counted 0 samples. Its
    input_id (the seed edges' ids) tells them. The sampler keeps the seed
    links' own nodes alone."""
    needs("torch_geometric")
    truth, rep = record(
        tmp_path,
        run_file,
        SEEDS_ALONE
        + """
from torch_geometric.loader import LinkLoader
graph = Data(x=torch.randn(40, 16), edge_index=torch.randint(0, 40, (2, 160)))
loader = LinkLoader(graph, link_sampler=SeedsAlone(), edge_label_index=graph.edge_index,
                    edge_label=torch.randint(0, 4, (160,)), batch_size=8, shuffle=True,
                    filter_per_worker=False)
def batches():
    return ((b.x[b.edge_label_index[0]] * b.x[b.edge_label_index[1]], b.edge_label)
            for b in loader)
"""
        + training_loop(2),
    )
    assert truth["updates"] == 40
    steps = rep["steps"][0]
    assert (steps["count"], steps["samples"], steps["samples_per_step"]) == (40, 320, 8)
    assert epochs_of(rep) == [(0, 20, 160), (1, 20, 160)]


# A graph of papers and their authors (PyG's HeteroData), and a sampler that
# keeps the seeds alone: each seed paper, or each seed link's two nodes.
HETERO = """
from torch_geometric.data import HeteroData
from torch_geometric.loader import LinkLoader, NodeLoader
from torch_geometric.sampler import BaseSampler, HeteroSamplerOutput
WRITES = ("author", "writes", "paper")
class SeedsAlone(BaseSampler):
    def sample_from_nodes(self, index, **kwargs):
        return HeteroSamplerOutput(node={"paper": index.node}, row={}, col={}, edge={},
                                   metadata=(index.input_id, index.time))
    def sample_from_edges(self, index, neg_sampling=None):
        author, a = torch.unique(index.row, return_inverse=True)
        paper, p = torch.unique(index.col, return_inverse=True)
        return HeteroSamplerOutput(node={"author": author, "paper": paper}, row={}, col={},
                                   edge={}, metadata=(index.input_id, torch.stack([a, p]),
                                                      index.label, index.time))
graph = HeteroData()
graph["paper"].x, graph["paper"].y = torch.randn(160, 16), torch.randint(0, 4, (160,))
graph["author"].x = torch.randn(30, 16)
graph[WRITES].edge_index = torch.stack([torch.randint(0, 30, (160,)), torch.randint(0, 160, (160,))])
if LINKS:
    loader = LinkLoader(graph, link_sampler=SeedsAlone(), batch_size=8, shuffle=True,
                        edge_label_index=(WRITES, graph[WRITES].edge_index),
                        edge_label=torch.randint(0, 4, (160,)), filter_per_worker=False)
    def batches():
        for b in loader:
            author, paper = b[WRITES].edge_label_index
            yield b["author"].x[author] * b["paper"].x[paper], b[WRITES].edge_label
else:
    loader = NodeLoader(graph, node_sampler=SeedsAlone(), input_nodes=("paper", None),
                        batch_size=8, shuffle=True, filter_per_worker=False)
    def batches():
        return ((b["paper"].x, b["paper"].y) for b in loader)
"""


@pytest.mark.parametrize("links", [False, True], ids=["nodes", "links"])
def test_a_heterogeneous_graph_s_mini_batches_count_their_seeds(tmp_path, run_file, links):
    """PyG's mini-batches of a graph with several node types (HeteroData)
    keep their seeds' count on the seeds' type (batch_size on the seed
    nodes' store, input_id on the seed links'), none on the batch itself:
    their steps counted 0 samples."""
    needs("torch_geometric")
    truth, rep = record(tmp_path, run_file, f"LINKS = {links}\n" + HETERO + training_loop(2))
    assert truth["updates"] == 40
    steps = rep["steps"][0]
    assert (steps["count"], steps["samples"], steps["samples_per_step"]) == (40, 320, 8)
    assert epochs_of(rep) == [(0, 20, 160), (1, 20, 160)]


def test_a_collator_s_batch_encoding_counts_its_samples(tmp_path, run_file):
    """transformers' collators hand out a BatchEncoding, a UserDict, not a
    dict: over an IterableDataset (a streamed corpus), whose batches only
    their contents tell, every step had 0 samples."""
    needs("transformers")
    truth, rep = record(
        tmp_path,
        run_file,
        """
from torch.utils.data import IterableDataset
from transformers import BatchEncoding
class Stream(IterableDataset):
    def __iter__(self):
        g = torch.Generator().manual_seed(0)
        for i in range(100):
            yield torch.randn(16, generator=g), i % 4
def collate(items):
    return BatchEncoding({"x": torch.stack([x for x, _ in items]),
                          "labels": torch.tensor([y for _, y in items])})
loader = DataLoader(Stream(), batch_size=8, collate_fn=collate)
def batches():
    return ((b["x"], b["labels"]) for b in loader)
"""
        + training_loop(2),
    )
    assert truth["updates"] == 26
    steps = rep["steps"][0]
    assert (steps["count"], steps["samples"]) == (26, 200), steps
    assert epochs_of(rep) == [(0, 13, 100), (1, 13, 100)]


def test_webdataset_s_loader_that_rebatches_has_the_script_s_steps(tmp_path, run_file):
    """webdataset's WebLoader over shards batched by 16, re-batched by 64
    after a shuffle buffer: counted at the DataLoader, each of its batches
    was a step, and an epoch ended with its pass, before the batches still
    in the buffer (3 steps an epoch where the script made 4). The
    pipeline's pass is the loader's now, its settings the DataLoader's."""
    needs("webdataset")
    shards = tmp_path / "shards"
    shards.mkdir()
    truth, rep = record(
        tmp_path,
        run_file,
        f"""
import numpy as np, webdataset as wds
shards = []
for s in range(4):
    shards.append(f"{shards}/shard-{{s}}.tar")
    with wds.TarWriter(shards[-1]) as w:
        for i in range(64):
            w.write({{"__key__": f"{{s}}-{{i}}", "x.npy": np.random.randn(16).astype("float32"),
                     "y.cls": i % 4}})
dataset = wds.WebDataset(shards, shardshuffle=False).decode().to_tuple("x.npy", "y.cls")
loader = wds.WebLoader(dataset.batched(16), batch_size=None, num_workers=2)
loader = loader.unbatched().shuffle(100).batched(64)
def batches():
    return ((x, torch.as_tensor(y)) for x, y in loader)
"""
        + training_loop(2),
    )
    assert truth["updates"] == 8
    steps = rep["steps"][0]
    assert (steps["count"], steps["samples"], steps["batches_per_step"]) == (8, 512, 1)
    assert epochs_of(rep) == [(0, 4, 256), (1, 4, 256)]
    nexts = [t["count"] for t in rep["timings"] if t["name"] == "dataloader_next"]
    assert nexts == [10], rep["timings"]  # each step's fetch once, and each pass's end
    assert meta(run_file, "fact.loader.num_workers") == "2"
