"""Docker sandbox backend, split by concern: ``engine`` (prerequisites), ``image`` (the runtime
image), ``keeper`` (the in-container fork server), ``stream`` (attach-socket framing), ``pool``
(warm-container lifecycle and cleanup). ``acceptgate.sandbox.docker_backend`` puts them together."""
