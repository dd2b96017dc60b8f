export async function main(argv: string[]): Promise<void> {
  process.stderr.write('prun-monitor: not implemented yet (' + argv.length + ' args)\n');
  process.exitCode = 70;
}
