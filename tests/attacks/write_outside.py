# Overwrite a world-writable file outside the sandbox and drop new files next to it and in the repo.
import os


def f(sentinel, sentinel_dir, repo_dir, tag):
    done = []
    targets = [sentinel, os.path.join(sentinel_dir, "planted-" + tag), os.path.join(repo_dir, "planted-" + tag)]
    for path in targets:
        try:
            with open(path, "w") as fh:
                fh.write("owned")
            done.append(path)
        except OSError:
            pass
    return "wrote: " + ", ".join(done) if done else "blocked"
