export async function main(argv: string[]): Promise<void> {
  process.stderr.write('prun-quota: not implemented yet (' + argv.length + ' args)\n');
  process.exitCode = 70;
}
