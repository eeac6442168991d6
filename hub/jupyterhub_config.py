"""JupyterHub for an autograd-workbook course: one instructor, learners with Unix accounts, nbgrader's exchange.

`./workbook hub` runs `jupyterhub -f hub/jupyterhub_config.py` as root with these environment variables (all optional):

  WORKBOOK_HUB_INSTRUCTOR  the instructor's account (default: instructor); their Lab has the formgrader
  WORKBOOK_HUB_LEARNERS    the learners' accounts, separated by spaces or commas (default: learner1 learner2)
  WORKBOOK_HUB_AUTH        shared (default: one shared password, WORKBOOK_HUB_PASSWORD, for a local trial) or pam
                           (each account's own system password: what a real course on one machine uses)
  WORKBOOK_HUB_IP / _PORT  where the hub listens (default 127.0.0.1:8000: this machine only)
  WORKBOOK_HUB_API_PORT, WORKBOOK_HUB_PROXY_API_PORT   the hub's and the proxy's own ports on 127.0.0.1 (8081, 8001)
  WORKBOOK_HUB_EXCHANGE    nbgrader's exchange, a folder every account can reach (default /srv/nbgrader/exchange)
  WORKBOOK_HUB_STATE       the hub's own files: its database, cookie secret, logs (default build/hub/state)

Each user's server is `jupyterhub-singleuser` from this checkout's environment, started as that Unix user in their
home (the LocalProcessSpawner). Its Jupyter configuration is hub/instructor/ or hub/learner/ (on JUPYTER_CONFIG_PATH,
the place of /etc/jupyter on a hub that serves only this course): nbgrader's course id and exchange for everyone,
the formgrader and Create Assignment for the instructor only.
"""

import os
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHECKOUT = HERE.parent
BIN = Path(sys.executable).parent  # the environment jupyterhub runs from: jupyterhub-singleuser, nbgrader, the grader
PROXY = CHECKOUT / "build" / "hub" / "node_modules" / ".bin" / "configurable-http-proxy"

INSTRUCTOR = os.environ.get("WORKBOOK_HUB_INSTRUCTOR", "instructor")
LEARNERS = set(re.split(r"[\s,]+", os.environ.get("WORKBOOK_HUB_LEARNERS", "learner1 learner2").strip())) - {""}
AUTH = os.environ.get("WORKBOOK_HUB_AUTH", "shared")
EXCHANGE = os.environ.get("WORKBOOK_HUB_EXCHANGE", "/srv/nbgrader/exchange")
STATE = Path(os.environ.get("WORKBOOK_HUB_STATE", CHECKOUT / "build" / "hub" / "state"))
STATE.mkdir(parents=True, exist_ok=True, mode=0o700)

c = get_config()  # noqa: F821 (traitlets provides it)

# ---- where the hub listens and keeps its files (never a user's readable folder: the cookie secret is in it)
c.JupyterHub.ip = os.environ.get("WORKBOOK_HUB_IP", "127.0.0.1")
c.JupyterHub.port = int(os.environ.get("WORKBOOK_HUB_PORT", "8000"))
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = int(os.environ.get("WORKBOOK_HUB_API_PORT", "8081"))
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{os.environ.get('WORKBOOK_HUB_PROXY_API_PORT', '8001')}"
c.JupyterHub.db_url = f"sqlite:///{STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(STATE / "jupyterhub.pid")
c.ConfigurableHTTPProxy.command = [str(PROXY)]
c.ConfigurableHTTPProxy.pid_file = str(STATE / "jupyterhub-proxy.pid")

# ---- who may log in: exactly the course's accounts
c.Authenticator.allowed_users = LEARNERS | {INSTRUCTOR}
if AUTH == "pam":
    c.JupyterHub.authenticator_class = "pam"  # the accounts' own passwords (PAM), as on a real course machine
elif AUTH == "shared":
    # one password for every listed account: a trial on this machine only, never a course (anyone who knows it
    # can log in as anyone on the list)
    c.JupyterHub.authenticator_class = "shared-password"
    c.SharedPasswordAuthenticator.user_password = os.environ.get("WORKBOOK_HUB_PASSWORD", "")
else:
    raise SystemExit(f"WORKBOOK_HUB_AUTH must be shared or pam, not {AUTH!r}")

# ---- each user's own server, as their own Unix user, in their own home
c.JupyterHub.spawner_class = "localprocess"
c.Spawner.cmd = [str(BIN / "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
c.Spawner.notebook_dir = "~"
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120
c.Spawner.environment = {
    "PATH": f"{BIN}:/usr/local/bin:/usr/bin:/bin",  # nbgrader, python -m autograder and bwrap in a Lab terminal
    "LANG": "C.UTF-8",
    "AUTOGRADER_EXCHANGE": EXCHANGE,  # nbgrader's exchange, for hub/*/nbgrader_config.py and the course's config
}


def role_config(spawner) -> None:
    """The instructor's server gets hub/instructor/ as its Jupyter configuration, every other server hub/learner/."""
    role = "instructor" if spawner.user.name == INSTRUCTOR else "learner"
    spawner.environment = {**spawner.environment, "JUPYTER_CONFIG_PATH": str(HERE / role)}


c.Spawner.pre_spawn_hook = role_config
