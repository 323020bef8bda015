export { LocalProxy, LocalProxyArgs } from "./local-proxy";
export { LocalProxyProcess, localProcessProvider } from "./provider";
export { LOCAL_PROCESS_TYPE, undoLocalCreate } from "./recover";
