"""pytorch/examples' word_language_model, shortened: an LSTM language model
fed sequence-first batches of (bptt tokens, batch sequences); with argv[1]
"batch_first", the same model with batch_first=True fed (sequences, tokens)."""

import json
import sys

import torch
import torch.nn.functional as F
from torch import nn

BATCH_FIRST = sys.argv[1:] == ["batch_first"]
torch.manual_seed(0)
ntoken, bsz, bptt = 500, 20, 35
corpus = torch.randint(0, ntoken, (bsz * 35 * 12 + 50,))


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    return data.narrow(0, 0, nbatch * bsz).view(bsz, -1).t().contiguous()


class RNNModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Embedding(ntoken, 64)
        self.rnn = nn.LSTM(64, 64, 2, batch_first=BATCH_FIRST)
        self.decoder = nn.Linear(64, ntoken)

    def forward(self, input, hidden):
        output, hidden = self.rnn(self.encoder(input), hidden)
        return F.log_softmax(self.decoder(output).view(-1, ntoken), dim=1), hidden

    def init_hidden(self, bsz):
        w = next(self.parameters())
        return (w.new_zeros(2, bsz, 64), w.new_zeros(2, bsz, 64))


def get_batch(source, i):
    seq_len = min(bptt, len(source) - 1 - i)
    return source[i : i + seq_len], source[i + 1 : i + 1 + seq_len].reshape(-1)


train_data = batchify(corpus, bsz)
model = RNNModel()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
batches = 0
for _epoch in range(2):
    model.train()
    hidden = model.init_hidden(bsz)
    for i in range(0, train_data.size(0) - 1, bptt):
        data, targets = get_batch(train_data, i)
        if BATCH_FIRST:
            data, targets = data.t(), targets.view(-1, bsz).t().reshape(-1)
        hidden = tuple(h.detach() for h in hidden)
        optimizer.zero_grad()
        output, hidden = model(data, hidden)
        F.nll_loss(output, targets).backward()
        optimizer.step()
        batches += 1
print(json.dumps({"batches": batches, "batch_size": bsz, "shape": list(data.shape)}))
