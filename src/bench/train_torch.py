#!/usr/bin/python3
"""PyTorch's dense training of a `veltair train` network: the baseline of the train benchmark.

Same network as the spec (first layer an EmbeddingBag in sum mode over the sparse features, which
is how PyTorch trains a sparse-input layer without densifying the input, initialised like
nn.Linear; then nn.Linear layers), same data file, same batch size, sample order shuffled per epoch
with the given seed, torch.optim.Adam with the same lr/betas/eps, the same epochs and threads.
Softmax outputs use cross-entropy with soft targets (1/|labels| on each label), written as
log_softmax + gather so that no dense target matrix is built; sigmoid outputs use BCE with logits.

Reports, one JSON object per line on stdout: first {"kind": "info", ...} with the torch version and
the BLAS that is loaded (torch.__config__ and the libraries mapped into this process), then one
{"kind": "epoch", ...} per epoch. With --step, it waits for a line on stdin before each epoch, so a
driver can interleave it with another trainer on the same cores.
"""
import argparse, json, math, os, sys, time

import torch


def read_xc(path, input_dim, output_dim):
    indices, offsets, weights, labels = [], [], [], []
    with open(path, 'r', encoding='latin-1') as f:
        first = True
        for line in f:
            line = line.rstrip('\r\n')
            if not line.strip():
                continue
            toks = line.split()
            if first:
                first = False
                if len(toks) == 3 and all(t.isdigit() for t in toks):
                    continue
            if line[0] in ' \t' or ':' in toks[0]:
                labs, feats = [], toks
            else:
                labs, feats = [int(x) for x in toks[0].split(',')], toks[1:]
            offsets.append(len(indices))
            for ft in feats:
                i, v = ft.split(':')
                indices.append(int(i))
                weights.append(float(v))
            labels.append(labs)
    return (torch.tensor(indices, dtype=torch.int64), torch.tensor(offsets + [len(indices)], dtype=torch.int64),
            torch.tensor(weights, dtype=torch.float32), labels)


class Net(torch.nn.Module):
    def __init__(self, spec, lazy=False):
        super().__init__()
        layers = spec['layers']
        d0 = layers[0]['dim']
        bound = 1.0 / math.sqrt(spec['input'])
        self.embed = torch.nn.EmbeddingBag(spec['input'], d0, mode='sum', sparse=lazy)
        torch.nn.init.uniform_(self.embed.weight, -bound, bound)
        self.bias0 = torch.nn.Parameter(torch.empty(d0).uniform_(-bound, bound))
        self.acts = [l['activation'] for l in layers]
        self.linears = torch.nn.ModuleList()
        prev = d0
        for l in layers[1:]:
            self.linears.append(torch.nn.Linear(prev, l['dim']))
            prev = l['dim']

    def hidden(self, act, x):
        return torch.relu(x) if act == 'relu' else torch.tanh(x) if act == 'tanh' else x

    def forward(self, idx, off, w):
        x = self.embed(idx, off, per_sample_weights=w) + self.bias0
        for i, lin in enumerate(self.linears):
            x = lin(self.hidden(self.acts[i], x))
        return x  # logits


def batch_of(data, rows):
    idx, offsets, w, labels = data
    starts, ends = offsets[rows], offsets[rows + 1]
    sel = torch.cat([torch.arange(s, e) for s, e in zip(starts.tolist(), ends.tolist())]) if len(rows) else torch.empty(0, dtype=torch.int64)
    lens = ends - starts
    off = torch.zeros(len(rows), dtype=torch.int64)
    off[1:] = torch.cumsum(lens, 0)[:-1]
    return idx[sel], off, w[sel], [labels[r] for r in rows.tolist()]


def loss_of(logits, labs, act):
    if act == 'softmax':
        logp = torch.log_softmax(logits, dim=1)
        r, c, y = [], [], []
        for i, ls in enumerate(labs):
            for l in ls:
                r.append(i); c.append(l); y.append(1.0 / len(ls))
        picked = logp[torch.tensor(r, dtype=torch.int64), torch.tensor(c, dtype=torch.int64)]
        return -(picked * torch.tensor(y)).sum() / logits.shape[0]
    target = torch.zeros_like(logits)
    for i, ls in enumerate(labs):
        target[i, ls] = 1.0
    return torch.nn.functional.binary_cross_entropy_with_logits(logits, target, reduction='sum') / logits.shape[0]


def evaluate(net, data, n):
    hits1 = p5 = r5 = counted = 0.0
    with torch.no_grad():
        for s in range(0, n, 1024):
            rows = torch.arange(s, min(n, s + 1024))
            idx, off, w, labs = batch_of(data, rows)
            top = torch.topk(net(idx, off, w), k=min(5, net.linears[-1].out_features if len(net.linears) else net.embed.embedding_dim), dim=1).indices.tolist()
            for t, ls in zip(top, labs):
                if not ls:
                    continue
                s_ = set(ls)
                h = sum(1 for x in t if x in s_)
                counted += 1; hits1 += t[0] in s_; p5 += h / 5.0; r5 += h / len(ls)
    return {'precision@1': hits1 / counted, 'precision@5': p5 / counted, 'recall@5': r5 / counted} if counted else {}


def blas_info():
    import re
    config = torch.__config__.show()
    blas = re.findall(r'(?:BLAS_INFO|LAPACK_INFO)=[^,\s]+', config)
    mapped = sorted({l.split()[-1] for l in open('/proc/self/maps') if ('blas' in l or 'lapack' in l) and '/' in l})
    return blas, mapped


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--spec', required=True)
    ap.add_argument('--train', required=True)
    ap.add_argument('--eval')
    ap.add_argument('--epochs', type=int, default=5)
    ap.add_argument('--batch', type=int, default=256)
    ap.add_argument('--lr', type=float, default=0.001)
    ap.add_argument('--threads', type=int, default=os.cpu_count())
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--step', action='store_true')
    # Lazy Adam on the first layer, as veltair does it: only the feature rows a batch touches get an
    # Adam update (torch.optim.SparseAdam over a sparse EmbeddingBag gradient); the rest stays Adam.
    ap.add_argument('--lazy-embedding', action='store_true')
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    spec = json.load(open(a.spec))
    t0 = time.time()
    train = read_xc(a.train, spec['input'], spec['layers'][-1]['dim'])
    test = read_xc(a.eval, spec['input'], spec['layers'][-1]['dim']) if a.eval else None
    read_s = time.time() - t0
    net = Net(spec, a.lazy_embedding)
    # One product first, so the BLAS library is mapped before it is reported.
    torch.randn(64, 64) @ torch.randn(64, 64)
    blas, mapped = blas_info()
    print(json.dumps({'kind': 'info', 'torch': torch.__version__, 'threads': torch.get_num_threads(), 'blasConfig': blas,
                      'blasLoaded': mapped, 'env': {k: os.environ.get(k) for k in ('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS')},
                      'readSeconds': read_s, 'trainRows': len(train[3])}), flush=True)
    if a.lazy_embedding:
        dense = [p for name, p in net.named_parameters() if name != 'embed.weight']
        opts = [torch.optim.SparseAdam([net.embed.weight], lr=a.lr, betas=(0.9, 0.999), eps=1e-8),
                torch.optim.Adam(dense, lr=a.lr, betas=(0.9, 0.999), eps=1e-8)]
    else:
        opts = [torch.optim.Adam(net.parameters(), lr=a.lr, betas=(0.9, 0.999), eps=1e-8)]
    n = len(train[3])
    act = spec['layers'][-1]['activation']
    g = torch.Generator().manual_seed(a.seed)
    for epoch in range(1, a.epochs + 1):
        if a.step:
            if not sys.stdin.readline():
                return
        order = torch.randperm(n, generator=g)
        t = time.time()
        total = 0.0
        for s in range(0, n, a.batch):
            rows = order[s:s + a.batch]
            idx, off, w, labs = batch_of(train, rows)
            for opt in opts:
                opt.zero_grad(set_to_none=True)
            loss = loss_of(net(idx, off, w), labs, act)
            loss.backward()
            for opt in opts:
                opt.step()
            total += loss.item() * len(rows)
        seconds = time.time() - t
        te = time.time()
        metrics = evaluate(net, test, len(test[3])) if test else {}
        print(json.dumps({'kind': 'epoch', 'epoch': epoch, 'loss': total / n, 'epochSeconds': seconds, 'evalSeconds': time.time() - te,
                          'samples': n, **metrics}), flush=True)


if __name__ == '__main__':
    main()
