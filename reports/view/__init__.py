"""``agentsweep view``: a local, read-only web app over the warehouse.

Modules, one concept each: ``progress`` (where a run stands: finished, running, stopped; a
running one's progress and ETA), ``data`` (what the JSON endpoints answer, SQL in
``warehouse/sql/view_*.sql``), ``pages`` (the HTML shells and the policy every answer carries),
``app`` (the Starlette app: routes, Host check, scrubbing), ``serve`` (uvicorn on one bound
socket). A run's page is the HTML report (``reports.html``). Imports nothing of ``pipeline/``:
the caller passes the redaction and the run-lock probe.
"""

from reports.view.app import ViewOptions, create_app
from reports.view.serve import address_of, bind, is_loopback, serve, warm

__all__ = ["ViewOptions", "address_of", "bind", "create_app", "is_loopback", "serve", "warm"]
