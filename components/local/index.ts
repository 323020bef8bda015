export { LocalProxy, LocalProxyArgs } from "./local-proxy";
export { LocalProxyProcess, localProcessProvider } from "./provider";
