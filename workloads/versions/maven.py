"""A Java reference client built against another release of its Maven artifact: the
client's project copied and packaged with the artifact's version property set (the pom
names it ``<artifactId>.version``), one jar for every client of that project, a launcher
each as `make clients` writes them."""

from __future__ import annotations

import shutil
from pathlib import Path

from lockharness.workloads.versions.library import Builder, source_dir
from lockharness.workloads.versions.npm import write_launcher

# clients.mk's JAVA_FLAGS: HotSpot's own warnings go to stderr, not the reply channel.
JAVA_FLAGS = "-XX:+UseSerialGC -XX:-UsePerfData -Xlog:disable -Xlog:all=warning:stderr"
JAR = "client.jar"
# Maven's advice after every failure, which says nothing of this one.
_ADVICE = (
    "-> [Help 1]",
    "To see the full stack trace",
    "Re-run Maven",
    "For more information",
    "[Help 1] http",
)


class MavenArtifact(Builder):
    registry = "maven"
    version_pattern = r"\d+(\.\d+)*([.-][0-9A-Za-z.-]+)?"
    version_form = "a release as Maven Central writes it, as 3.40.0"

    def build(self, into: Path) -> None:
        work = into / "src"
        source = source_dir(self.library)
        shutil.copytree(source, work, ignore=shutil.ignore_patterns("target"))
        artifact = self.library.package.partition(":")[2]
        mvn = shutil.which("mvn") or "mvn"
        self.run(
            [mvn, "-q", "-B", "-T", "1", f"-D{artifact}.version={self.version}", "package"], work
        )
        # The pom's finalName is its shaded jar (the shade plugin keeps original-*.jar).
        shaded = [j for j in (work / "target").glob("*.jar") if not j.name.startswith("original-")]
        if len(shaded) != 1:
            raise self.refused(f"expected one shaded jar in target/, found {shaded}", ["mvn"])
        shutil.copy(shaded[0], into / JAR)
        shutil.rmtree(work)

    def telling(self, line: str) -> bool:
        text = line.removeprefix("[ERROR]").strip()
        return bool(text) and not text.startswith(_ADVICE)

    def finish(self, built: Path) -> None:
        command = f'java {JAVA_FLAGS} -jar "$here/../{JAR}" {self.client}'
        write_launcher(built / "bin" / self.client, command)
