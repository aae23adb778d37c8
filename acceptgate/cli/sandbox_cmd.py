"""acceptgate sandbox image build [--from-rootfs] | sandbox info | sandbox cleanup

``info`` prints one JSON object: the threat model, and for every backend (local, local-rlimits, docker,
...) whether it can run on this host and what it enforces here, or why it cannot; for Docker also the
engine, images and leftover containers. It exits 0 whatever is unavailable: saying so is its job.

Docker sandbox maintenance: ``image build`` builds deployments/Dockerfile (needs a registry for its
slim Python base); ``--from-rootfs`` builds the equivalent image from this host's Python with
``docker import`` (no registry). ``image build`` and ``cleanup`` need an engine: without one, exit 3
with how to start one.
"""

from __future__ import annotations

import json

from acceptgate.sandbox import backend as backends
from acceptgate.sandbox.backend import BackendUnavailable, Limits


def add_parser(sub) -> None:
    p = sub.add_parser("sandbox", help="show what every sandbox backend enforces here; build or clean up "
                                       "the Docker sandbox")
    cmds = p.add_subparsers(dest="sandbox_command", metavar="SUBCOMMAND", required=True)

    img = cmds.add_parser("image", help="the sandbox image")
    img_cmds = img.add_subparsers(dest="image_command", metavar="ACTION", required=True)
    build = img_cmds.add_parser("build", help="build the sandbox image and print its tag")
    build.add_argument("--from-rootfs", action="store_true",
                       help="no registry: docker-import a tarball of this host's Python runtime")
    build.add_argument("--python", metavar="PATH",
                       help="interpreter to package with --from-rootfs (default /usr/bin/python3.11)")
    build.add_argument("--context", metavar="DIR", help="Dockerfile directory (default: deployments/)")
    build.set_defaults(func=run_build)

    info = cmds.add_parser("info", help="print, as JSON, the threat model and what each backend enforces on this "
                                        "host (or why it cannot run here)")
    info.set_defaults(func=run_info)

    clean = cmds.add_parser("cleanup", help="remove sandbox containers left by ended processes")
    clean.add_argument("--all", action="store_true", help="remove every sandbox container, also live ones")
    clean.set_defaults(func=run_cleanup)


def run_build(args) -> int:
    from acceptgate.sandbox.docker import engine, image

    client = engine.connect()
    try:
        if args.from_rootfs:
            tag, rootfs = image.build_from_rootfs(client, args.python)
            detail = {"tag": tag, "rootfs_sha256": rootfs.sha256, "tarball_bytes": rootfs.size,
                      "files": rootfs.files, "notes": rootfs.notes}
        else:
            tag = image.build_from_dockerfile(client, args.context)
            detail = {"tag": tag}
    except image.ImageError as exc:
        raise BackendUnavailable(str(exc)) from None
    detail["image_bytes"] = client.images.get(tag).attrs.get("Size")
    print(json.dumps(detail))
    return 0


def run_info(args) -> int:
    from acceptgate.sandbox.threat import THREAT_MODEL

    limits = Limits()
    out = {"threat_model": THREAT_MODEL, "limits": limits_dict(limits), "backends": {}}
    for name in backends.names():
        if name == "docker":
            out["backends"][name] = docker_info(limits)
            continue
        try:
            with backends.create(name) as backend:
                out["backends"][name] = {"available": True, "isolation": backend.isolation(limits).as_dict()}
        except BackendUnavailable as exc:
            out["backends"][name] = {"available": False, "why": str(exc)}
    print(json.dumps(out, indent=2))
    return 0


def limits_dict(limits: Limits) -> dict:
    import dataclasses

    return dataclasses.asdict(limits)


def docker_info(limits: Limits) -> dict:
    """The docker backend here: unavailable with why, or engine, images, containers and isolation."""
    try:
        from acceptgate.sandbox.docker import engine, image, pool
        from acceptgate.sandbox.docker_backend import DockerBackend, IMAGE_ENV

        client = engine.connect()
    except (BackendUnavailable, ImportError) as exc:
        return {"available": False, "why": str(exc)}
    out = {"available": True,
           "engine": engine.describe(client),
           "images": image.local_rootfs_images(client),
           "current_rootfs_image": image.current_rootfs_image(client),
           "containers": [{"id": c.short_id, "status": c.status,
                           "owner": c.labels.get(f"{pool.LABEL}.owner")}
                          # other processes' pools remove containers while we list them
                          for c in client.containers.list(all=True, filters={"label": pool.LABEL},
                                                          ignore_removed=True)],
           "image_env": IMAGE_ENV}
    try:
        with DockerBackend(client=client) as backend:
            out["image"] = backend.image
            out["isolation"] = backend.isolation(limits).as_dict()
    except BackendUnavailable as exc:
        out["available"] = False
        out["image"] = None
        out["why"] = str(exc)
    return out


def run_cleanup(args) -> int:
    from acceptgate.sandbox.docker import engine, pool

    client = engine.connect()
    print(json.dumps({"removed": pool.remove_stale(client, everything=args.all)}))
    return 0
