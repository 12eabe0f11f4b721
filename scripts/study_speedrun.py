#!/usr/bin/env python3
"""The steps of scripts/study-speedrun that read and write files (issue 25). Not responsible for training
or comparing: that is sextant's, called by the shell script. Subcommands:

  recipe COMPARE_JSON BASE_SPEC FEATURE_SPEC... --out SPEC --choice JSON
      the recipe ladder: the baseline plus every feature whose paired multiplier estimate is > 1 and whose
      verdict is decided (Holm over the family), or, when none is decided, every feature with estimate > 1.
  compose CHOICE_JSON RECIPE_COMPARE_JSON
      the product of the chosen single-feature multipliers beside the recipe's measured one.
  train-args SPEC WIDTH
      the `sextant train` flags of SPEC's rung at WIDTH (one a line), as the ladder runner sets them.
  record TARGET NAME=RUN_DIR...
      the record table (markdown): training time to the first evaluation with val_loss <= TARGET.
"""
import hashlib
import json
import math
import sys

# Descriptor options that replace each other (docs/MODEL.md: egate replaces gate): a recipe keeps the one
# whose multiplier is larger.
EXCLUSIVE = [{"gate", "egate"}]


def read_spec(path):
    """Ladder spec -> ordered dict key -> value (comments and blank lines dropped)."""
    spec = {}
    for line in open(path):
        line = line.split("#", 1)[0].strip()
        if line:
            key, _, value = line.partition(" ")
            spec[key] = value.strip()
    return spec


def write_spec(spec, path, header):
    width = max(len(k) for k in spec) + 1
    with open(path, "w") as f:
        f.write("".join("# " + h + "\n" for h in header))
        f.write("".join(f"{k.ljust(width)}{v}\n" for k, v in spec.items()))


def feature_change(base, spec):
    """What a feature spec changes: (added descriptor options, {key: value} of the other keys)."""
    base_opts = base["model"].split("-")
    opts = [o for o in spec["model"].split("-") if o not in base_opts]
    keys = {k: v for k, v in spec.items() if k not in ("name", "model") and base.get(k) != v}
    return opts, keys


def multiplier(row, base_loss):
    """compare writes a non-finite multiplier as null: infinite when the variant's projected loss is below
    anything the baseline's fit reaches (its loss is lower), otherwise unknown (None)."""
    m = row.get("multiplier")
    if m is None and row.get("loss") is not None and base_loss is not None and row["loss"] < base_loss:
        return math.inf
    return m


def choose(variants):
    """variants: compare's rows without the baseline. Returns (chosen rows, whether any was decided)."""
    better = [v for v in variants if v["multiplier"] is not None and v["multiplier"] > 1]
    decided = [v for v in better if v.get("decided")]
    return (decided, True) if decided else (better, False)


def build_recipe(base, changes, chosen):
    """The baseline plus each chosen feature's change, best multiplier first; a feature that sets a key
    another already set differently, or an option exclusive with one already taken, is dropped."""
    recipe, opts, taken, dropped = dict(base), [], [], []
    for v in sorted(chosen, key=lambda v: -v["multiplier"]):
        add, keys = changes[v["name"]]
        clash = any(k != "extra" and k in recipe and recipe[k] != base.get(k) and recipe[k] != val
                    for k, val in keys.items())
        clash |= any(o in group and (group - {o}) & set(opts) for o in add for group in EXCLUSIVE)
        if clash:
            dropped.append(v["name"])
            continue
        opts += [o for o in add if o not in opts]
        for k, val in keys.items():
            recipe[k] = recipe[k] + " " + val if k == "extra" and recipe.get(k) else val   # extra flags add up
        taken.append(v)
    recipe["model"] = "-".join([base["model"]] + opts)
    return recipe, taken, dropped


def cmd_recipe(args):
    out = args[args.index("--out") + 1]
    choice_path = args[args.index("--choice") + 1]
    paths = [a for i, a in enumerate(args) if a not in ("--out", "--choice") and args[i - 1] not in ("--out", "--choice")]
    report = json.load(open(paths[0]))
    base = read_spec(paths[1])
    specs = {s["name"]: s for s in map(read_spec, paths[2:])}
    changes = {name: feature_change(base, s) for name, s in specs.items()}
    base_loss = report["variants"][0].get("loss")
    variants = [dict(v, multiplier=multiplier(v, base_loss)) for v in report["variants"][1:] if v["name"] in specs]
    chosen, decided = choose(variants)
    recipe, taken, dropped = build_recipe(base, changes, chosen)
    # Named by its content: a finished ladder is skipped by its run directory's name (runs/NAME), so a recipe
    # that changes when the single-feature results do must not reuse the old recipe's runs.
    digest = hashlib.sha1(repr(sorted(recipe.items())).encode()).hexdigest()[:8]
    recipe["name"] = (base["name"].rsplit("-", 1)[0] + "-" if "-" in base["name"] else "") + "recipe-" + digest
    product = 1.0
    for v in taken:
        product *= v["multiplier"]
    names = [v["name"] for v in taken]
    how = ("decided better than the baseline (paired interval excludes 1, Holm-adjusted)" if decided else
           "none decided: the features with multiplier estimate > 1")
    write_spec(recipe, out, [f"Recipe of the speedrun study: {how}.", "features: " + (" ".join(names) or "none"),
                             f"product of their multipliers: {product:.3f}"] +
               ([f"dropped (clash with a better feature): {' '.join(dropped)}"] if dropped else []))
    json.dump({"features": names, "decided": decided, "dropped": dropped, "product": product,
               "multipliers": {v["name"]: v["multiplier"] for v in taken}}, open(choice_path, "w"), indent=1)
    print(f"recipe {recipe['name']}: {how}: {' '.join(names) or 'none'}"
          + (f" (dropped: {' '.join(dropped)})" if dropped else ""))
    print(f"  model {recipe['model']}" + "".join(f"; {k} {recipe[k]}" for k in recipe
                                                 if k not in ("name", "model") and recipe[k] != base.get(k)))


def cmd_compose(args):
    choice = json.load(open(args[0]))
    base, row = json.load(open(args[1]))["variants"][:2]
    fmt = lambda x: "n/a" if x is None else f"{x:.3f}"
    hi = row.get("paired_hi")   # null: unbounded
    print(f"recipe {row['name']}: measured multiplier {fmt(multiplier(row, base.get('loss')))}x "
          f"[paired 95% {fmt(row.get('paired_lo'))}, {'inf' if hi is None else fmt(hi)}], {row['verdict']}; "
          f"product of its {len(choice['features'])} single-feature multipliers {choice['product']:.3f}x")


# Ladder keys that map one-to-one onto `sextant train` flags.
FLAGS = {"train": "--train", "val": "--val", "seq": "--seq", "batch": "--batch", "optimizer": "--optimizer",
         "schedule": "--schedule", "warmup": "--warmup", "eval_batches": "--eval-batches", "mtp": "--mtp",
         "prefix_aux": "--prefix-aux", "aux_end": "--aux-end", "prefix_vocab": "--prefix-vocab",
         "hyper_lr": "--hyper-lr", "unique_tokens": "--unique-tokens"}


def cmd_train_args(args):
    spec, width = read_spec(args[0]), int(args[1])
    # The ladder's learning-rate transfer: lr and muon_lr scale as (lr_ref_width / width)^lr_width_power
    # (src/scale/ladder.c; defaults 128 and 1).
    scale = (float(spec.get("lr_ref_width", 128)) / width) ** float(spec.get("lr_width_power", 1))
    flags = ["--model", spec["model"].replace("{width}", str(width))]
    flags += ["--lr", repr(float(spec.get("lr", 3e-3)) * scale), "--muon-lr", repr(float(spec.get("muon_lr", 0.02)) * scale)]
    for key, flag in FLAGS.items():
        if key in spec:
            flags += [flag, spec[key]]
    flags += spec.get("extra", "").split()
    print("\n".join(flags))


def time_to_target(metrics_path, target):
    """(seconds of training to the first evaluation with val_loss <= target or None, last val_loss, steps).
    Training time = sum over logged steps of the step's tokens / its tok_per_s: evaluations are excluded."""
    seconds, tokens_before, last = 0.0, 0.0, None
    for line in open(metrics_path):
        if not line.strip():
            continue
        r = json.loads(line)
        if "tok_per_s" in r and "tokens" in r:
            seconds += (r["tokens"] - tokens_before) / r["tok_per_s"]
            tokens_before = r["tokens"]
        if "val_loss" in r:
            last = r["val_loss"]
            if last <= target:
                return seconds, last, r["step"]
    return None, last, None


def cmd_record(args):
    target = float(args[0])
    print(f"| run | model | time to val_loss <= {target:g} (s, training only) | step | val_loss there |")
    print("|---|---|---|---|---|")
    for arg in args[1:]:
        name, _, run = arg.partition("=")
        model = json.load(open(run + "/config.json"))["model"]
        seconds, loss, step = time_to_target(run + "/metrics.jsonl", target)
        if seconds is None:
            print(f"| {name} | {model} | not reached (last val_loss {loss if loss is None else f'{loss:.4f}'}) | - | - |")
        else:
            print(f"| {name} | {model} | {seconds:.2f} | {step} | {loss:.4f} |")


if __name__ == "__main__":
    commands = {"recipe": cmd_recipe, "compose": cmd_compose, "train-args": cmd_train_args, "record": cmd_record}
    if len(sys.argv) < 2 or sys.argv[1] not in commands:
        sys.exit(__doc__)
    commands[sys.argv[1]](sys.argv[2:])
