"""Novaberg settings: everything comes from the environment, through small typed readers that
reject bad values loudly (healthchecks' ``hc/settings.py`` habit)."""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path
from typing import Any

import dj_database_url

from novaberg import embedded

BASE_DIR = Path(__file__).resolve().parent.parent


class SettingsError(ValueError):
    pass


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default).strip()


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in {"1", "true", "yes", "on"}:
        return True
    if raw in {"0", "false", "no", "off"}:
        return False
    raise SettingsError(f"{name} must be a boolean (true/false), got {raw!r}")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise SettingsError(f"{name} must be an integer, got {raw!r}") from exc
    if minimum is not None and value < minimum:
        raise SettingsError(f"{name} must be >= {minimum}, got {value}")
    return value


def env_float(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return float(raw)
    except ValueError as exc:
        raise SettingsError(f"{name} must be a number, got {raw!r}") from exc


def env_list(name: str, default: str = "") -> list[str]:
    return [part.strip() for part in os.environ.get(name, default).split(",") if part.strip()]


def _fail(message: str) -> None:
    # One clear line instead of a traceback (failures name the service and the fix).
    print(f"novaberg: {message}", file=sys.stderr)
    raise SystemExit(2)


# Settings only read: the data folder, the secret key and the services are created and started by
# the launcher (novaberg/launcher.py), never by importing this module.
DATA_DIR = embedded.data_dir()


def _secret_key() -> tuple[str, bool]:
    """(key, ephemeral). DJANGO_SECRET_KEY, else the launcher's DATA_DIR/secret_key; without
    either a random key for this process only (``manage.py check`` warns: novaberg.W001)."""
    given = env_str("DJANGO_SECRET_KEY")
    if given:
        return given, False
    try:
        stored = (DATA_DIR / "secret_key").read_text().strip()
    except OSError:
        stored = ""
    if stored:
        return stored, False
    return secrets.token_urlsafe(64), True


SECRET_KEY, SECRET_KEY_EPHEMERAL = _secret_key()
DEBUG = env_bool("DJANGO_DEBUG", False)
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1],testserver")
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS")
PORT = env_int("NOVABERG_PORT", 8000, minimum=1)

# Production hardening (python manage.py check --deploy): on unless DEBUG; HTTPS-only parts are
# switched by NOVABERG_HTTPS so that plain-HTTP local use keeps working.
HTTPS = env_bool("NOVABERG_HTTPS", False)
SESSION_COOKIE_SECURE = HTTPS
CSRF_COOKIE_SECURE = HTTPS
SECURE_SSL_REDIRECT = HTTPS
SECURE_HSTS_SECONDS = 31536000 if HTTPS else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = HTTPS
SECURE_HSTS_PRELOAD = HTTPS
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if HTTPS else None
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "channels",
    "conversation",
    "directives",
    "files",
    "knowledge",
]

MIDDLEWARE = [
    "novaberg.logging.RequestIdMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "novaberg.urls"
WSGI_APPLICATION = None
ASGI_APPLICATION = "novaberg.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "novaberg.context_processors.backend",
                "novaberg.context_processors.address_form",
            ],
        },
    },
]

# --- services -----------------------------------------------------------------------------------

# DATABASE_URL / REDIS_URL when set (the launcher hands them to its children too); else the
# embedded servers of DATA_DIR, found by their PID files. When one is not running, the URL points
# at where it would be (a connection then fails; manage.py turns that into one German line saying
# how to start it) and EMBEDDED_NOT_RUNNING names it.
EMBEDDED_NOT_RUNNING: list[str] = []
DATABASE_URL = env_str("DATABASE_URL")
if not DATABASE_URL:
    _pg = embedded.postgres_state(DATA_DIR)
    if _pg is not None:
        DATABASE_URL = _pg.url
    else:
        EMBEDDED_NOT_RUNNING.append("postgres")
        DATABASE_URL = (
            f"postgresql://postgres:@/{embedded.database_name()}?host={embedded.pg_dir()}"
        )
REDIS_URL = env_str("REDIS_URL")
if not REDIS_URL:
    _redis = embedded.redis_state(DATA_DIR)
    if _redis is not None:
        REDIS_URL = _redis.url
    else:
        EMBEDDED_NOT_RUNNING.append("redis")
        # Port 1: nothing listens there, so nothing of this app reaches another checkout's Redis
        # on the default port by accident.
        REDIS_URL = "redis://127.0.0.1:1/0"

if env_str("NOVABERG_REDIS_DB"):
    # Another Redis database on the same server (benchmarks; tests against an explicit REDIS_URL)
    # so a running app's worker never takes their tasks.
    REDIS_URL = REDIS_URL.rsplit("/", 1)[0] + "/" + str(env_int("NOVABERG_REDIS_DB", 0, minimum=0))

DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=0)}
# A Celery worker started by the tests runs against the test database.
if env_str("NOVABERG_DATABASE_NAME"):
    DATABASES["default"]["NAME"] = env_str("NOVABERG_DATABASE_NAME")
DATABASES["default"]["TEST"] = {"NAME": env_str("NOVABERG_TEST_DB_NAME", "test_novaberg")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# No consumer of this app uses the layer: the chat socket streams its turns in-process
# (conversation/consumers.py), so a Redis stall does not reach it. Kept configured for a
# consumer that would send between processes; what follows holds for any such consumer.
# channels_redis waits for a socket's next message with a blocking BZPOPMIN of 5 s
# (RedisChannelLayer.brpop_timeout); redis-py's default socket timeout is also 5 s, so the read
# timed out together with the blocking pop and every quiet chat socket closed with 1011. The
# socket timeout must stay well above that pop: a Redis stall shorter than it only delays a
# message (it is processed when Redis answers), a longer one fails the send loudly.
CHANNEL_LAYER_SOCKET_TIMEOUT_S = 15.0
CHANNEL_LAYERS: dict[str, dict[str, Any]] = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {
            "hosts": [
                {
                    "address": REDIS_URL,
                    "socket_timeout": CHANNEL_LAYER_SOCKET_TIMEOUT_S,
                    "socket_connect_timeout": 5.0,
                    "socket_keepalive": True,
                    # A pooled connection idle for longer is PINGed before its next command, so
                    # one that a restarted Redis or a NAT dropped is replaced, not used.
                    "health_check_interval": 30,
                }
            ]
        },
    }
}

CELERY_BROKER_URL = REDIS_URL
CELERY_RESULT_BACKEND = REDIS_URL
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# redis-py waits forever on a stalled Redis by default: a task sent from a request (and
# /healthz's worker ping) held it for the whole stall. Bounded here; the broker's blocking
# pop (kombu's brpop_timeout, 1 s) stays well below the read timeout. A request that sends a
# task asks the broker first (novaberg.health.broker_answers) and answers 503 at once.
CELERY_BROKER_CONNECTION_TIMEOUT = 2.0
CELERY_BROKER_TRANSPORT_OPTIONS = {"socket_timeout": 2.0, "socket_connect_timeout": 2.0}
# One retry of a failed publish (Celery's default is three): with the read timeout above, a
# send during a stall gives up after about 6 s (read, reconnect, read again), not after the
# whole stall.
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 1,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.2,
}
CELERY_REDIS_SOCKET_CONNECT_TIMEOUT = 2.0
CELERY_BEAT_SCHEDULE_FILENAME = str(DATA_DIR / "celerybeat-schedule")
CELERY_BEAT_SCHEDULE: dict[str, dict[str, object]] = {}

# The cache holds the login throttle's counts (novaberg/login_throttle.py), read on every
# login: a stalled Redis must fail the read within a second (the login answers 503), not hold
# the request for redis-py's default of no timeout at all.
REDIS_COMMAND_TIMEOUT_S = 1.0
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "OPTIONS": {
            "socket_timeout": REDIS_COMMAND_TIMEOUT_S,
            "socket_connect_timeout": REDIS_COMMAND_TIMEOUT_S,
        },
    }
}

# --- LLM and embeddings -------------------------------------------------------------------------

LLM_BASE_URL = env_str("NOVABERG_LLM_BASE_URL")
LLM_API_KEY = env_str("NOVABERG_LLM_API_KEY")
LLM_MODEL = env_str("NOVABERG_LLM_MODEL", "gpt-4o-mini")
LLM_TIMEOUT_S = env_float("NOVABERG_LLM_TIMEOUT_S", 60.0)  # longest silence on a connection
# Retries only for failures before generation (refused, connect timeout, 429/5xx); never a read.
LLM_MAX_RETRIES = env_int("NOVABERG_LLM_MAX_RETRIES", 2, minimum=0)
LLM_CONNECT_TIMEOUT_S = env_float("NOVABERG_LLM_CONNECT_TIMEOUT_S", 5.0)
LLM_FIRST_TOKEN_S = env_float("NOVABERG_LLM_FIRST_TOKEN_S", 20.0)  # a stream's first token
LLM_TOTAL_S = env_float("NOVABERG_LLM_TOTAL_S", 60.0)  # caps every purpose's deadline
# A whole turn (every node and model call of one message) ends by then with a German sentence.
TURN_TOTAL_S = env_float("NOVABERG_TURN_TOTAL_S", LLM_TOTAL_S)
for _name, _value in (
    ("NOVABERG_LLM_TIMEOUT_S", LLM_TIMEOUT_S),
    ("NOVABERG_LLM_CONNECT_TIMEOUT_S", LLM_CONNECT_TIMEOUT_S),
    ("NOVABERG_LLM_FIRST_TOKEN_S", LLM_FIRST_TOKEN_S),
    ("NOVABERG_LLM_TOTAL_S", LLM_TOTAL_S),
    ("NOVABERG_TURN_TOTAL_S", TURN_TOTAL_S),
):
    if _value <= 0:
        _fail(f"{_name} must be > 0, got {_value}")

# "local": the fastest local runtime that passed its check (ONNX Runtime, int8), PyTorch when
# ONNX Runtime cannot serve; "local-torch" / "local-onnx": that runtime only
# (novaberg/embeddings.py).
EMBEDDINGS_BACKEND = env_str("NOVABERG_EMBEDDINGS", "local")
if EMBEDDINGS_BACKEND not in {"local", "local-torch", "local-onnx", "openai"}:
    _fail(
        "NOVABERG_EMBEDDINGS must be 'local', 'local-torch', 'local-onnx' or 'openai', "
        f"got {EMBEDDINGS_BACKEND!r}"
    )
# Where the ONNX export of the packaged model is cached (named by the hash of its weights).
EMBEDDINGS_CACHE_DIR = Path(env_str("NOVABERG_EMBEDDINGS_CACHE_DIR") or str(DATA_DIR / "models"))
EMBEDDINGS_MODEL = env_str("NOVABERG_EMBEDDINGS_MODEL", "text-embedding-3-small")
EMBEDDINGS_BASE_URL = env_str("NOVABERG_EMBEDDINGS_BASE_URL", LLM_BASE_URL)
EMBEDDING_DIM = env_int("NOVABERG_EMBEDDING_DIM", 384, minimum=1)

# --- files and knowledge ------------------------------------------------------------------------

# Comma list; empty means nothing can be released (fail closed, DESIGN.md "Files").
FILES_BOUNDARY = env_list("NOVABERG_FILES_BOUNDARY")
KNOWLEDGE_DIR = Path(env_str("NOVABERG_KNOWLEDGE_DIR") or str(DATA_DIR / "knowledge"))

# --- API ----------------------------------------------------------------------------------------

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "novaberg.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "novaberg.api_errors.exception_handler",
    # JSON with a depth limit and without lone surrogates (400, never a RecursionError's 500).
    "DEFAULT_PARSER_CLASSES": [
        "novaberg.parsers.CheckedJSONParser",
    ],
    # The API takes JSON bodies only (the pages send JSON): a form body would read a missing
    # boolean as false, which the schema cannot state (a 415 instead; issue 27, the contract).
    # The token login keeps its own parsers (ObtainAuthToken: form, multipart, JSON).
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
    # Failed logins (page and token API) per address and per name: novaberg/login_throttle.py.
    "DEFAULT_THROTTLE_RATES": {"anmeldung_adresse": "30/hour", "anmeldung_name": "10/hour"},
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Novaberg API",
    "DESCRIPTION": "Nova, a German-speaking companion: sessions, turns, directives, files.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # The schema names every endpoint and field: only a logged-in person reads it.
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    # Request bodies get their own components: a field required and non-blank in a request
    # (minLength, the pattern of novaberg.openapi.AutoSchema) is not so in an answer.
    "COMPONENT_SPLIT_REQUEST": True,
    # A PATCH body is read with the serializer's own required fields (no partial update).
    "COMPONENT_SPLIT_PATCH": False,
    # 401/403/404/400/415 and their bodies, which the stack gives to every view of a kind
    # (novaberg/openapi.py); the enum hook is drf-spectacular's default.
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "novaberg.openapi.document_error_answers",
    ],
    # Two choice sets share the field name "state" (a root's and a watcher run's): each gets
    # its own schema name instead of a generated one (drf_spectacular.W001).
    "ENUM_NAME_OVERRIDES": {
        "RootStateEnum": "files.models.FileRoot.State",
        "IndexRunStateEnum": "files.models.IndexRun.State",
    },
}

LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/login/"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "de"
TIME_ZONE = "Europe/Berlin"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = DATA_DIR / "staticfiles"

# --- conversation limits ------------------------------------------------------------------------

MAX_MESSAGE_CHARS = env_int("NOVABERG_MAX_MESSAGE_CHARS", 2000, minimum=1)
PENDING_QUESTION_TTL_S = env_int("NOVABERG_PENDING_QUESTION_TTL_S", 3600, minimum=1)
DIRECTIVES_BLOCK_BUDGET_CHARS = env_int("NOVABERG_DIRECTIVES_BLOCK_BUDGET", 4000, minimum=100)

# --- directives ---------------------------------------------------------------------

# --- files ---------------------------------------------------------------------

# Files II: retrieval per turn and reads. The dense floor is calibrated per embedding
# model (manage.py calibrate_floor -> RetrievalCalibration); this fallback holds only until then.
# Measured with all-MiniLM-L6-v2 on German notes: unrelated questions reach 0.37-0.39.
FILES_RETRIEVAL_K = env_int("NOVABERG_FILES_RETRIEVAL_K", 3, minimum=1)
FILES_DENSE_FLOOR_FALLBACK = env_float("NOVABERG_FILES_DENSE_FLOOR_FALLBACK", 0.40)
FILES_DENSE_MARGIN_FALLBACK = env_float("NOVABERG_FILES_DENSE_MARGIN_FALLBACK", 0.05)
# Up to this many index rows of a pair, the dense channel scans them exactly (filter first);
# above it, HNSW with a raised ef_search (pgvector 0.6 filters after the index scan).
FILES_EXACT_SCAN_MAX_ROWS = env_int("NOVABERG_FILES_EXACT_SCAN_MAX_ROWS", 5000, minimum=1)
FILES_HNSW_EF_SEARCH = env_int("NOVABERG_FILES_HNSW_EF_SEARCH", 400, minimum=1)
FILES_RRF_K = env_int("NOVABERG_FILES_RRF_K", 60, minimum=1)
FILES_LEXICAL_WEIGHT = env_float("NOVABERG_FILES_LEXICAL_WEIGHT", 1.0)
FILES_READ_MAX_LINES = env_int("NOVABERG_FILES_READ_MAX_LINES", 200, minimum=1)
# Every read is bounded in characters as well (one long line is cut inside the line, said
# "gekürzt"); each [AUFZEICHNUNGEN] record shows at most FILES_RECORD_MAX_CHARS of its text.
FILES_READ_MAX_CHARS = env_int("NOVABERG_FILES_READ_MAX_CHARS", 20_000, minimum=100)
FILES_RECORD_MAX_CHARS = env_int("NOVABERG_FILES_RECORD_MAX_CHARS", 1_500, minimum=100)
FILES_GREP_MAX_LINES = env_int("NOVABERG_FILES_GREP_MAX_LINES", 50, minimum=1)
FILES_GREP_TIME_LIMIT_S = env_float("NOVABERG_FILES_GREP_TIME_LIMIT_S", 2.0)
FILES_QUERY_MAX_CHARS = env_int("NOVABERG_FILES_QUERY_MAX_CHARS", 300, minimum=10)

# Relative paths in a release ("Notizen") are resolved against this directory, like "~/Notizen".
FILES_BASE_DIR = Path(env_str("NOVABERG_FILES_BASE_DIR") or str(Path.home()))
# Files above this size are skipped with reason "zu_gross" (never read).
FILES_MAX_BYTES = env_int("NOVABERG_FILES_MAX_BYTES", 20 * 1024 * 1024, minimum=1)
# Fast path: a file whose (size, mtime_ns, ctime_ns, inode) is unchanged is not re-hashed. A tool
# can set mtime back but not ctime, so a same-size-same-mtime rewrite still changes the key.
FILES_FAST_PATH = env_bool("NOVABERG_FILES_FAST_PATH", True)
# Every root gets a full-hash verification run at least this often (0 = every run hashes all).
FILES_FULL_HASH_EVERY_S = env_int("NOVABERG_FILES_FULL_HASH_EVERY_S", 24 * 3600, minimum=0)
# Beat: how often every active root is walked.
FILES_INDEX_EVERY_S = env_int("NOVABERG_FILES_INDEX_EVERY_S", 15 * 60, minimum=10)
# New/changed files learned together: one embedding call for their topics and blocks and one
# transaction for their rows (files/indexing.py). A kill loses the batch being written, never
# part of a file; a larger batch costs memory (the parsed text of every file in it).
FILES_LEARN_BATCH_FILES = env_int("NOVABERG_FILES_LEARN_BATCH_FILES", 32, minimum=1)
# Text of one file handed to the enricher (LLM or offline extraction).
FILES_ENRICH_MAX_CHARS = env_int("NOVABERG_FILES_ENRICH_MAX_CHARS", 6000, minimum=200)
# Tests only: "files.tests.<module>:<function>" called at named points of a run
# (files/watcher/hooks.py), e.g. a pause per file so a test can kill a worker mid-run.
FILES_TEST_HOOK = env_str("NOVABERG_FILES_TEST_HOOK")
# A running index run whose heartbeat is older than this (and whose root lock is free) lost its
# worker; beat checks every FILES_RUN_REAP_EVERY_S and queues the root again.
FILES_RUN_STALE_AFTER_S = env_float("NOVABERG_FILES_RUN_STALE_AFTER_S", 45.0)
FILES_RUN_REAP_EVERY_S = env_float("NOVABERG_FILES_RUN_REAP_EVERY_S", 15.0)
CELERY_BEAT_SCHEDULE["files-index-roots"] = {
    "task": "files.tasks.index_all_roots",
    "schedule": float(FILES_INDEX_EVERY_S),
}
CELERY_BEAT_SCHEDULE["files-reap-index-runs"] = {
    "task": "files.tasks.reap_index_runs",
    "schedule": FILES_RUN_REAP_EVERY_S,
}

# --- conversation ---------------------------------------------------------------------

# Short-term memory lives this long unless promoted; long-term memory does not expire.
MEMORY_SHORT_TTL_DAYS = env_int("NOVABERG_MEMORY_SHORT_TTL_DAYS", 14, minimum=1)
# Beat: how often expired short-term memories are deleted (searches filter them meanwhile).
MEMORY_EXPIRE_EVERY_S = env_int("NOVABERG_MEMORY_EXPIRE_EVERY_S", 3600, minimum=10)
CELERY_BEAT_SCHEDULE["conversation-memory-expire"] = {
    "task": "conversation.tasks.memory_expire",
    "schedule": float(MEMORY_EXPIRE_EVERY_S),
}
# A turn left "laufend" by a dead web process is closed as "unterbrochen" (issue 27,
# conversation/reaper.py): at once when its process is gone, else once it is older than
# TURN_TOTAL_S plus this margin. Beat looks every TURN_REAP_EVERY_S; a web process at its start.
TURN_REAP_MARGIN_S = env_float("NOVABERG_TURN_REAP_MARGIN_S", 120.0)
TURN_REAP_EVERY_S = env_float("NOVABERG_TURN_REAP_EVERY_S", 30.0)
if TURN_REAP_MARGIN_S < 0 or TURN_REAP_EVERY_S <= 0:
    _fail("NOVABERG_TURN_REAP_MARGIN_S must be >= 0 and NOVABERG_TURN_REAP_EVERY_S > 0")
CELERY_BEAT_SCHEDULE["conversation-reap-turns"] = {
    "task": "conversation.tasks.reap_turns",
    "schedule": TURN_REAP_EVERY_S,
}
# Cosine floor for [GEDAECHTNIS] (MiniLM on German: unrelated texts still reach ~0.39).
MEMORY_FLOOR = env_float("NOVABERG_MEMORY_FLOOR", 0.45)
MEMORY_K = env_int("NOVABERG_MEMORY_K", 5, minimum=1)
# A short-term entry is promoted to long-term memory once its salience reaches this value.
MEMORY_PROMOTE_SALIENCE = env_float("NOVABERG_MEMORY_PROMOTE_SALIENCE", 0.8)
# Messages the chat sockets' channel may hold before sends fail (channels_redis default: 100).
# channels_redis keeps the channels of all sockets of one web process in ONE Redis key and
# checks this capacity against it, so it bounds a whole daphne process, not one socket: with
# 100 sockets streaming on a busy machine, 1,000 refused turns (ChannelFull, bench_conversation).
CHANNEL_LAYERS["default"]["CONFIG"]["capacity"] = env_int(
    "NOVABERG_CHANNEL_CAPACITY", 20000, minimum=100
)
# Connections per web process to Redis for the layer: every streaming turn sends from its own
# thread, so 100 concurrent turns exhausted redis-py's default pool of 100 (MaxConnectionsError).
# Threads per web process that run chat turns (conversation.consumers.turn_executor): turns
# beyond it wait. Each holds a PostgreSQL connection while its turn runs.
TURN_THREADS = env_int("NOVABERG_TURN_THREADS", 32, minimum=1)
CHANNEL_LAYERS["default"]["CONFIG"]["hosts"][0]["max_connections"] = env_int(
    "NOVABERG_CHANNEL_MAX_CONNECTIONS", 1000, minimum=10
)

# --- logging: one JSON object per line, request id / turn id on every line ----------------------

LOG_LEVEL = env_str("NOVABERG_LOG_LEVEL", "INFO").upper()
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"context": {"()": "novaberg.logging.ContextFilter"}},
    "formatters": {"json": {"()": "novaberg.logging.JsonFormatter"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "json",
            "filters": ["context"],
        }
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        "httpx": {"level": "WARNING"},
        "httpcore": {"level": "WARNING"},
        "sentence_transformers": {"level": "WARNING"},
        "pgserver": {"level": "WARNING"},
    },
}
