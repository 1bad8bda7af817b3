"""Builds a set of recipes and their dependencies, in dependency order, reusing every
artifact whose cache key is unchanged, with up to `parallel` builds at once."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass

from pyfreight.container import images
from pyfreight.deps.graph import build_order, check_graph, closure, for_os, longest_chains_first
from pyfreight.deps.recipe_build import Artifact, artifact_stem, build_recipe, cached_artifact, recipe_key
from pyfreight.errors import PyfreightError
from pyfreight.logs import say
from pyfreight.paths import Workspace
from pyfreight.records import exclusive
from pyfreight.sources.fetch import fetch_source
from pyfreight.sources.recipes import Recipe, load_all
from pyfreight.targets import Target


@dataclass
class DepsResult:
    artifacts: dict[str, Artifact]
    built: list[str]
    reused: list[str]


def fetch_all(recipes: Iterable[Recipe], ws: Workspace, offline: bool = False) -> None:
    for recipe in recipes:
        for source in recipe.sources:
            fetch_source(source, ws.downloads, offline=offline, log=say)


def build_deps(
    names: Iterable[str] | None,
    target: Target,
    ws: Workspace,
    parallel: int = 1,
    jobs: int = 1,
    force: bool = False,
    offline: bool = False,
    recipes: Mapping[str, Recipe] | None = None,
) -> DepsResult:
    """`recipes` defaults to the repository's recipes/ (tests pass their own)."""
    recipes = recipes if recipes is not None else load_all()
    check_graph(recipes)
    recipes = for_os(recipes, target.os, names)
    # A target's dependencies are every recipe built for it but a training runtime,
    # which is built only when a pgo build's training names it.
    wanted = names if names is not None else [n for n, r in recipes.items() if not r.training_only]
    order = build_order(recipes, wanted)
    fetch_all((recipes[n] for n in order), ws, offline)
    image = images.ensure_images(ws, target)

    keys: dict[str, str] = {}
    for name in order:  # dependencies first, so their keys exist
        deps = sorted(recipes[name].depends)
        keys[name] = recipe_key(recipes[name], image, target, {d: keys[d] for d in deps})

    artifacts: dict[str, Artifact] = {}
    built: list[str] = []
    reused: list[str] = []
    total = len(order)
    lock = threading.Lock()
    counter = iter(range(1, total + 1))

    def step(name: str) -> Artifact:
        recipe = recipes[name]
        with lock:
            number = next(counter)
        label = f"[{number:>2}/{total}] {recipe.name} {recipe.version}"
        stem = artifact_stem(recipe, target)
        with exclusive(ws.artifacts / f"{stem}.json", label):
            if not force and (found := cached_artifact(ws, recipe, target, keys[name])):
                say(f"{label}: up to date ({found.path.name})")
                reused.append(name)
                return found
            started = time.monotonic()
            say(f"{label}: building (log: {ws.logs / (stem + '.log')})")
            inputs = [artifacts[d] for d in sorted(closure(recipes, recipe.depends))]
            direct = {d: keys[d] for d in sorted(recipe.depends)}
            artifact = build_recipe(recipe, image, target, keys[name], inputs, direct, ws, jobs)
            say(f"{label}: built in {time.monotonic() - started:.1f} s")
            built.append(name)
            return artifact

    pending = longest_chains_first(recipes, order)
    running: dict[Future, str] = {}
    with ThreadPoolExecutor(max_workers=max(1, parallel)) as pool:
        while pending or running:
            ready = [n for n in pending if all(d in artifacts for d in recipes[n].depends)][
                : max(1, parallel) - len(running)
            ]
            for name in ready:
                pending.remove(name)
                running[pool.submit(step, name)] = name
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                name = running.pop(future)
                try:
                    artifacts[name] = future.result()
                except BaseException:
                    pending.clear()  # start nothing new; let running builds finish
                    for other in running:
                        other.cancel()
                    wait(running)
                    raise
    if set(artifacts) != set(order):
        raise PyfreightError("internal error: not every recipe was built")
    return DepsResult(artifacts=artifacts, built=built, reused=reused)
