/* ddx/version.h - owns the version of ddx: the one definition that
 * `ddx version`, the reports ("tool": "ddx 0.1.0", SARIF's driver) and the
 * language server's serverInfo print. The VS Code extension's own version
 * is package.json's. */
#ifndef DDX_VERSION_H
#define DDX_VERSION_H

#define DDX_VERSION "0.1.0"

#endif
