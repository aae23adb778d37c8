"""acceptgate sandbox image build [--from-rootfs] | sandbox info | sandbox cleanup

Docker sandbox maintenance. ``image build`` builds deployments/Dockerfile (needs a registry for its
slim Python base); ``--from-rootfs`` builds the equivalent image from this host's Python with
``docker import`` (no registry). ``info`` prints one JSON object: engine, images, leftover
containers and what the docker backend enforces. No reachable engine: exit 3, with how to start one.
"""

from __future__ import annotations

import json

from acceptgate.sandbox.backend import BackendUnavailable, Limits


def add_parser(sub) -> None:
    p = sub.add_parser("sandbox", help="Docker sandbox: build its image, show what it enforces, clean up")
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

    info = cmds.add_parser("info", help="print engine, images and enforced isolation as JSON")
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
    from acceptgate.sandbox.docker import engine, image, pool
    from acceptgate.sandbox.docker_backend import DockerBackend, IMAGE_ENV

    client = engine.connect()
    out = {"engine": engine.describe(client),
           "images": image.local_rootfs_images(client),
           "current_rootfs_image": image.current_rootfs_image(client),
           "containers": [{"id": c.short_id, "status": c.status,
                           "owner": c.labels.get(f"{pool.LABEL}.owner")}
                          for c in client.containers.list(all=True, filters={"label": pool.LABEL})],
           "image_env": IMAGE_ENV}
    try:
        with DockerBackend(client=client) as backend:
            out["image"] = backend.image
            out["isolation"] = backend.isolation(Limits()).as_dict()
    except BackendUnavailable as exc:
        out["image"] = None
        out["problem"] = str(exc)
    print(json.dumps(out, indent=2))
    return 0


def run_cleanup(args) -> int:
    from acceptgate.sandbox.docker import engine, pool

    client = engine.connect()
    print(json.dumps({"removed": pool.remove_stale(client, everything=args.all)}))
    return 0
