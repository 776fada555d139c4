"""Names and sizes drawn from: teams, services, images, and the ladders requests snap to."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from clustergen.units import MI


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


_TEAMS = _words(
    "payments checkout search catalog identity growth data ml platform messaging billing logistics fraud ads "
    "media support analytics inventory pricing notifications reviews loyalty partners risk compliance marketing "
    "mobile web recs content maps booking orders shipping warehouse accounts ledger tax crm"
)
_SUBS = _words("api web batch workers jobs svc core edge internal events stream etl ui gw")
_NOUNS = _words(
    "cart checkout order invoice ledger account user profile session auth token search index catalog product price "
    "offer coupon promo review rating media image video thumbnail notification email sms push webhook event audit "
    "report export import sync feed recommendation ranking feature model geo address shipment tracking inventory "
    "stock warehouse payment refund fraud risk config gateway graphql frontend admin dashboard"
)
_ROLES = _words(
    "api service worker consumer web backend frontend processor scheduler indexer cache proxy sync exporter "
    "listener handler engine manager writer reader"
)
_STATEFUL = (
    ("postgres", "docker.io/library/postgres:16.4", 5432),
    ("redis", "docker.io/library/redis:7.4.1", 6379),
    ("kafka", "docker.io/bitnami/kafka:3.8.0", 9092),
    ("zookeeper", "docker.io/bitnami/zookeeper:3.9.2", 2181),
    ("elasticsearch", "docker.elastic.co/elasticsearch/elasticsearch:8.15.3", 9200),
    ("rabbitmq", "docker.io/library/rabbitmq:3.13-management", 5672),
    ("mongodb", "docker.io/library/mongo:7.0.14", 27017),
    ("nats", "docker.io/library/nats:2.10.22", 4222),
    ("clickhouse", "docker.io/clickhouse/clickhouse-server:24.8", 8123),
    ("minio", "quay.io/minio/minio:RELEASE.2024-10-13T13-34-11Z", 9000),
)
_SIDECARS = (
    ("istio-proxy", "docker.io/istio/proxyv2:1.23.2", 15090),
    ("log-shipper", "cr.fluentbit.io/fluent/fluent-bit:3.1.9", 2020),
    ("envoy", "docker.io/envoyproxy/envoy:v1.31.2", 9901),
    ("oauth2-proxy", "quay.io/oauth2-proxy/oauth2-proxy:v7.7.1", 4180),
    ("statsd-exporter", "docker.io/prom/statsd-exporter:v0.27.1", 9102),
)
_JOBWORDS = _words("nightly hourly cleanup backup report reindex sync export compaction rollup")
_BARE = (
    ("debug", "docker.io/nicolaka/netshoot:v0.13"),
    ("tmp-shell", "docker.io/library/busybox:1.37"),
    ("dnsutils", "registry.k8s.io/e2e-test-images/jessie-dnsutils:1.7"),
    ("psql-client", "docker.io/library/postgres:16.4"),
    ("curl-test", "docker.io/curlimages/curl:8.10.1"),
)
_CPU_LADDER = (
    5,
    10,
    20,
    25,
    50,
    75,
    100,
    150,
    200,
    250,
    300,
    400,
    500,
    600,
    750,
    1000,
    1200,
    1500,
    2000,
    2500,
    3000,
    4000,
)
_MEM_LADDER = tuple(
    x * MI
    for x in (16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384)
)
_MEM_DECIMAL = tuple(x * 10**6 for x in (50, 100, 128, 200, 256, 500, 1000, 2000, 4000, 8000))


def _snap(value: float, ladder: Sequence[int]) -> int:
    """The ladder value nearest on a log scale: request sizes people actually write."""
    if value <= ladder[0]:
        return ladder[0]
    best = ladder[-1]
    for a, b in itertools.pairwise(ladder):
        if value <= b:
            best = a if value * value < a * b else b
            break
    return best


