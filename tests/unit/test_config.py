"""Settings: defaults, parsing, and errors that name the variable."""

from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from agentws.core.errors import ConfigError
from agentws.settings.config import Settings, parse_bind, parse_database_url


def test_defaults_suit_a_laptop():
    settings = Settings.from_env({})
    assert settings.bind == "127.0.0.1:8080"
    assert settings.database_url == "sqlite:///./agentws.db"
    assert settings.public_base_url == "http://127.0.0.1:8080"
    assert settings.shutdown_grace_s == 10.0
    assert settings.max_body_bytes == 1024 * 1024
    assert settings.data_dir == Path()


def test_every_variable_is_read():
    settings = Settings.from_env(
        {
            "AGENTWS_BIND": "0.0.0.0:9000",
            "AGENTWS_DATABASE_URL": "postgresql://agentws@db/agentws",
            "AGENTWS_BASE_URL": "https://agents.example.com/",
            "AGENTWS_DATA_DIR": "/var/lib/agentws",
            "AGENTWS_INSTANCE_ID": "web-1",
            "AGENTWS_LOG_LEVEL": "debug",
            "AGENTWS_SHUTDOWN_GRACE_S": "2.5",
            "AGENTWS_RUN_TIMEOUT_S": "60",
            "AGENTWS_STORE_TIMEOUT_S": "1",
            "AGENTWS_STORE_POOL_SIZE": "4",
            "AGENTWS_STORE_READ_PROCESSES": "0",
            "AGENTWS_SSE_STALL_S": "7",
            "AGENTWS_SSE_KEEPALIVE_S": "3",
            "AGENTWS_MCP_IDLE_S": "600",
            "AGENTWS_MAX_BODY_BYTES": "2048",
        }
    )
    assert settings.bind_host == "0.0.0.0"
    assert settings.bind_port == 9000
    assert settings.database_url == "postgresql://agentws@db/agentws"
    assert settings.public_base_url == "https://agents.example.com"
    assert settings.data_dir == Path("/var/lib/agentws")
    assert settings.instance_id == "web-1"
    assert settings.log_level == "DEBUG"
    assert settings.shutdown_grace_s == 2.5
    assert settings.run_timeout_s == 60
    assert settings.store_timeout_s == 1
    assert settings.store_pool_size == 4
    assert settings.store_read_processes == 0
    assert settings.sse_stall_s == 7
    assert settings.sse_keepalive_s == 3
    assert settings.mcp_idle_s == 600
    assert settings.max_body_bytes == 2048


def test_base_url_follows_a_wildcard_bind():
    assert (
        Settings.from_env({"AGENTWS_BIND": "0.0.0.0:80"}).public_base_url == "http://localhost:80"
    )
    assert Settings.from_env({"AGENTWS_BIND": "[::1]:81"}).public_base_url == "http://[::1]:81"


def test_empty_variables_count_as_unset():
    assert Settings.from_env({"AGENTWS_BIND": ""}).bind == "127.0.0.1:8080"


@pytest.mark.parametrize(
    ("variable", "value", "says"),
    [
        ("AGENTWS_BIND", "8080", "HOST:PORT"),
        ("AGENTWS_BIND", "localhost:99999", "port"),
        ("AGENTWS_DATABASE_URL", "mysql://db/x", "sqlite:///PATH"),
        ("AGENTWS_DATABASE_URL", "sqlite://agentws.db", "three slashes"),
        ("AGENTWS_DATABASE_URL", "postgresql:///nohost", "needs a host"),
        ("AGENTWS_BASE_URL", "agents.example.com", "http(s) URL"),
        ("AGENTWS_SHUTDOWN_GRACE_S", "abc", "seconds"),
        ("AGENTWS_SHUTDOWN_GRACE_S", "-1", "seconds"),
        ("AGENTWS_RUN_TIMEOUT_S", "inf", "seconds"),
        ("AGENTWS_SSE_STALL_S", "nan", "seconds"),
        ("AGENTWS_STORE_POOL_SIZE", "0", "whole number"),
        ("AGENTWS_STORE_READ_PROCESSES", "-1", "whole number"),
        ("AGENTWS_MAX_BODY_BYTES", "1MB", "whole number"),
        ("AGENTWS_LOG_LEVEL", "LOUD", "DEBUG"),
        ("AGENTWS_INSTANCE_ID", "a b", "letters"),
        ("AGENTWS_CONFIRM_TTL_S", "0", "5 to 3600 seconds"),
        ("AGENTWS_CONFIRM_TTL_S", "86400", "5 to 3600 seconds"),
        ("AGENTWS_CONFIRM_TTL_S", "soon", "seconds"),
        # ASCII digits, bounded: '²' is a digit to str.isdigit(), 1e308 s no timedelta holds.
        ("AGENTWS_STORE_POOL_SIZE", "²", "whole number"),
        ("AGENTWS_WORKER_CONCURRENCY", "\u0663", "whole number"),
        ("AGENTWS_MAX_BODY_BYTES", "9" * 20, "whole number"),
        ("AGENTWS_DELIVERY_LOG_KEEP", "1_000", "whole number"),
        ("AGENTWS_APPROVAL_TTL_S", "1e308", "seconds"),
        ("AGENTWS_RUN_TIMEOUT_S", "9" * 400, "seconds"),
        ("AGENTWS_BIND", "127.0.0.1:²", "HOST:PORT"),
    ],
)
def test_a_bad_value_names_the_variable(variable, value, says):
    with pytest.raises(ConfigError) as caught:
        Settings.from_env({variable: value})
    assert caught.value.message.startswith(f"{variable}: ")
    assert says in caught.value.message
    assert repr(value[:39]).rstrip("'") in caught.value.message


def test_parse_bind_accepts_ipv6():
    assert parse_bind("[::1]:8080") == ("::1", 8080)


@pytest.mark.parametrize(
    "url",
    [
        "sqlite:///./agentws.db",
        "sqlite:////var/lib/agentws/agentws.db",
        "sqlite:///:memory:",
        "postgresql://postgres@127.0.0.1:5432/test",
        "postgres://u:p@db/x?search_path=s",
    ],
)
def test_database_urls_that_work(url):
    assert parse_database_url(url) == url


def test_the_model_settings_and_a_key_that_never_shows():
    default = Settings.from_env({"ANTHROPIC_API_KEY": ""})
    assert default.anthropic_api_key is None  # empty is unset: the offline model
    assert (default.model, default.model_timeout_s, default.model_max_tokens) == (
        "claude-sonnet-4-5",
        60.0,
        2048,
    )
    settings = Settings.from_env(
        {
            "ANTHROPIC_API_KEY": "sk-ant-secret",
            "ANTHROPIC_BASE_URL": "https://gateway.example.com/anthropic/",
            "AGENTWS_MODEL": "claude-opus-4-1",
            "AGENTWS_MODEL_TIMEOUT_S": "30",
            "AGENTWS_MODEL_MAX_TOKENS": "512",
        }
    )
    assert settings.anthropic_api_key == "sk-ant-secret"
    assert settings.anthropic_base_url == "https://gateway.example.com/anthropic"
    assert (settings.model, settings.model_timeout_s, settings.model_max_tokens) == (
        "claude-opus-4-1",
        30.0,
        512,
    )
    assert "sk-ant-secret" not in repr(settings)


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("AGENTWS_MODEL", "claude sonnet"),
        ("ANTHROPIC_BASE_URL", "gateway.example.com"),
        ("AGENTWS_MODEL_MAX_TOKENS", "0"),
    ],
)
def test_bad_model_settings_name_their_variable(variable: str, value: str):
    with pytest.raises(ConfigError, match=variable):
        Settings.from_env({variable: value})


def test_the_body_read_timeout_is_a_positive_number_of_seconds():
    assert Settings.from_env({}).body_read_timeout_s == 30.0
    assert Settings.from_env({"AGENTWS_BODY_READ_TIMEOUT_S": "0.5"}).body_read_timeout_s == 0.5
    for bad in ("0", "-1", "soon", "inf"):
        with pytest.raises(ConfigError, match="AGENTWS_BODY_READ_TIMEOUT_S"):
            Settings.from_env({"AGENTWS_BODY_READ_TIMEOUT_S": bad})


@pytest.mark.parametrize(
    "value",
    [
        "not-a-key",
        "x" * 44,  # 33 bytes, not 32
        "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="[:-4],  # cut short, as in a bad paste
        "é" * 44,
    ],
)
def test_a_malformed_secret_key_stops_the_process_without_showing_the_value(value):
    with pytest.raises(ConfigError) as caught:
        Settings.from_env({"AGENTWS_SECRET_KEY": value})
    message = caught.value.message
    assert message.startswith("AGENTWS_SECRET_KEY: ")
    assert "32 bytes in URL-safe base64" in message
    assert value not in message


def test_a_secret_key_is_taken_as_is():
    key = Fernet.generate_key().decode()
    assert Settings.from_env({"AGENTWS_SECRET_KEY": f" {key}\n"}).secret_key == key


def test_the_mcp_body_limit_follows_the_argument_limit_unless_set() -> None:
    # A message the argument limit would refuse is refused before it is parsed.
    assert Settings.from_env({}).mcp_max_body_bytes == 1024 * 1024 + 64 * 1024
    raised = Settings.from_env({"AGENTWS_TOOL_MAX_ARGUMENT_BYTES": "4194304"})
    assert raised.mcp_max_body_bytes == 4 * 1024 * 1024 + 64 * 1024
    both = {"AGENTWS_TOOL_MAX_ARGUMENT_BYTES": "4194304", "AGENTWS_MCP_MAX_BODY_BYTES": "1000"}
    assert Settings.from_env(both).mcp_max_body_bytes == 1000
